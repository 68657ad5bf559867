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
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/orderflow/orderflow"
	"github.com/orderflow/orderflow/platform/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app(os.Getenv, os.Stdout, os.Stderr).Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// app is the binary's commands, orderflow's own kinds alone (package orderflow
// runs it with a team's kinds too).
func app(getenv func(string) string, stdout, stderr io.Writer) cli.App {
	return orderflow.Worker(getenv, stdout, stderr)
}
