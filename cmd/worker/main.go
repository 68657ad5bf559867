// Command worker runs orderflow's Temporal worker (OrderWorkflow and its activities)
// and the Kafka ingress, and serves /healthz, /readyz and /metrics.
//
//	worker                                 run until SIGTERM, then drain
//	worker migrate                         apply the database migrations and exit
//	worker dlq redrive [--event-id ID]...  re-publish dead letters to the requests topic, each once
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/platform"
	"github.com/orderflow/orderflow/internal/platform/codecauth"
	"github.com/orderflow/orderflow/internal/platform/kafkaclient"
	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
	"github.com/orderflow/orderflow/internal/platform/telemetry"
	"github.com/orderflow/orderflow/internal/platform/tracing"
	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/worker"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := loadConfig(getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := telemetry.NewLogger(stdout, c.LogLevel)
	if len(args) > 1 {
		return command(ctx, c, args[1:], logger, stdout)
	}

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
			provider.New(c.Payments, traces.Transport(http.DefaultTransport)), events, reg, traces),
		Consumer: cons,
		Writers:  []worker.Closer{{Name: "events writer", Close: events.Close}, {Name: "dead-letter writer", Close: dlq.Close}},
		Registry: reg,
		Ready:    base.Ready,
		Codec:    codec,
	}, c.Run)
}
