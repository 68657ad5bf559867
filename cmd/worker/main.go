// Command worker runs orderflow's Temporal worker (the order workflows and their activities)
// and the Kafka ingress, and serves /healthz, /readyz and /metrics.
//
//	worker                                 run until SIGTERM, then drain
//	worker migrate                         apply the database migrations and exit
//	worker bootstrap                       create the Temporal namespace and the Kafka topics
//	worker reconcile report [--since D]    the reconciler's findings and what it did about each
//	worker findings list [--open]          the findings, the open ones (not acknowledged) with --open
//	worker findings ack ID... --by NAME    acknowledge findings
//	worker tenants list                    every tenant: its keys, its budget, its orders
//	worker orders show ID|KEY              an order across tenants, its payments, refunds, findings, workflow
//	worker orders repair --query Q --reset-to first|last [--rate N] [--dry-run]
//	                                       reset the current run of each listed workflow that failed, once
//	worker dlq redrive [--id ID]...        re-publish dead letters to the requests topic, each once
//	                                       (or --tenant T --kind K --event-id ID...)
//	worker shadow [--since D] [--limit N]  replay running workflows on this build; exit 1 if one would charge otherwise
//	worker version                         print the build's version
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/orderflow/orderflow/platform"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/telemetry"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/settings"
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
	return cli.App{Name: "worker", Summary: "orderflow's Temporal worker and Kafka ingress", Stdout: stdout, Stderr: stderr, Commands: []cli.Command{
		{Summary: "run until SIGTERM, then drain", Run: func(ctx context.Context, _ *flag.FlagSet) error {
			return serve(ctx, getenv, stdout)
		}},
		platform.MigrateCommand(getenv, stdout),
		bootstrapCommand(getenv, stdout),
		reconcileReportCommand(getenv, stdout),
		findingsListCommand(getenv, stdout),
		findingsAckCommand(getenv, stdout),
		tenantsListCommand(getenv, stdout),
		ordersShowCommand(getenv, stdout),
		ordersRepairCommand(getenv, stdout, stderr),
		dlqListCommand(getenv, stdout),
		dlqShowCommand(getenv, stdout, stderr),
		dlqPurgeCommand(getenv, stdout),
		dlqRedriveCommand(getenv, stdout),
		shadowCommand(getenv, stdout, stderr),
	}}
}

// serve runs the worker.
func serve(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	c, err := settings.LoadWorker(config.New(getenv))
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
	deps, err := newDeps(ctx, c, base, traces, logger)
	if err != nil {
		return err
	}
	return worker.Run(ctx, deps, c.Run)
}
