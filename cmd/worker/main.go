// Command worker runs orderflow's Temporal worker (OrderWorkflow and its activities)
// and the Kafka ingress, and serves /healthz, /readyz and /metrics.
//
//	worker                                 run until SIGTERM, then drain
//	worker migrate                         apply the database migrations and exit
//	worker bootstrap                       create the Temporal namespace and the Kafka topics
//	worker dlq redrive [--event-id ID]...  re-publish dead letters to the requests topic, each once
//	worker version                         print the build's version
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/platform"
	"github.com/orderflow/orderflow/internal/platform/cli"
	"github.com/orderflow/orderflow/internal/platform/codecauth"
	"github.com/orderflow/orderflow/internal/platform/kafkaclient"
	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
	"github.com/orderflow/orderflow/internal/platform/telemetry"
	"github.com/orderflow/orderflow/internal/platform/tracing"
	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app(os.Getenv, os.Stdout, os.Stderr).Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// app is the worker binary's commands; each reads only the settings it uses.
func app(getenv func(string) string, stdout, stderr io.Writer) cli.App {
	var ids stringList
	var l layout
	return cli.App{Name: "worker", Summary: "orderflow's Temporal worker and Kafka ingress", Stdout: stdout, Stderr: stderr, Commands: []cli.Command{
		{Summary: "run until SIGTERM, then drain", Run: func(ctx context.Context, _ *flag.FlagSet) error {
			return serve(ctx, getenv, stdout)
		}},
		platform.MigrateCommand(getenv, stdout),
		{Name: "bootstrap", Args: "[--partitions N] [--replication-factor N] [--retention D]",
			Summary: "create the Temporal namespace and the Kafka topics, leaving what exists alone (TEMPORAL_*, KAFKA_*, the topics' names)",
			Flags: func(fs *flag.FlagSet) {
				fs.IntVar(&l.partitions, "partitions", 12, "partitions of the requests and events topics (the dead-letter topic has 1)")
				fs.IntVar(&l.replicas, "replication-factor", 3, "replicas of each topic")
				fs.DurationVar(&l.retention, "retention", 72*time.Hour, "how long Temporal keeps closed workflows")
			},
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				if fs.NArg() > 0 || l.partitions < 1 || l.replicas < 1 || l.retention < 24*time.Hour {
					return cli.Usagef("want positive --partitions and --replication-factor, --retention of a day or more, no argument")
				}
				return bootstrap(ctx, getenv, l, stdout)
			}},
		{Name: "dlq redrive", Args: "[--event-id ID]...",
			Summary: "re-publish dead letters to the requests topic, each once (DATABASE_URL, KAFKA_*, DLQ_TOPIC, REQUESTS_TOPIC, PAYLOAD_KEYS)",
			Flags: func(fs *flag.FlagSet) {
				fs.Var(&ids, "event-id", "redrive only this eventId (repeatable); default: all")
			},
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				if fs.NArg() > 0 {
					return cli.Usagef("unexpected argument %q", fs.Arg(0))
				}
				return redrive(ctx, getenv, ids, stdout)
			}},
	}}
}

// serve runs the worker.
func serve(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	c, err := loadConfig(getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := telemetry.NewLogger(stdout, c.LogLevel)

	traces, err := tracing.FromEnv(ctx, "orderflow-worker", getenv)
	if err != nil {
		return err
	}
	defer traces.Flush(logger) // last: spans of the stop are sent too
	base, err := platform.Open(ctx, c.Common, traces, logger)
	if err != nil {
		return err
	}
	defer base.Close() // after worker.Run's ordered stop
	reg := base.Registry
	reg.MustRegister(orderstore.New(base.Pool).OpenPaymentsCollector())
	events := kafkaclient.NewWriter(c.Kafka, c.EventsTopic)
	dlq := kafkaclient.NewWriter(c.Kafka, c.DLQTopic)
	cons, err := newConsumer(c, base, dlq, reg, traces, logger)
	if err != nil {
		return err
	}
	base.Ready.Gate("postgres", "temporal") // a worker without them can do nothing
	base.Ready.Add("consumer", cons.Ready)
	var codec http.Handler
	if c.Run.CodecAddr != "" {
		if codec, err = codecauth.Guard(payloadcodec.Handler(base.Codec), c.Codec, logger); err != nil {
			return err
		}
	}
	return worker.Run(ctx, worker.Deps{
		Logger:   logger,
		Temporal: base.Temporal,
		Activities: worker.NewActivities(base.Pool,
			provider.New(c.Payments, provider.Metered(traces.Transport(http.DefaultTransport), reg)), events, reg, traces),
		Consumer: cons,
		Writers:  []worker.Closer{{Name: "events writer", Close: events.Close}, {Name: "dead-letter writer", Close: dlq.Close}},
		Registry: reg,
		Ready:    base.Ready,
		Codec:    codec,
	}, c.Run)
}
