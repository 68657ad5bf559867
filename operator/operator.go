// Package operator is the command line an operator runs against orderflow's
// fleet: the worker's commands (bootstrap, reconcile report, findings, tenants,
// orders show and repair, dead letters, shadow, customers' erasures) and the
// API's (keys, limits).
// A binary that runs orderflow's API or worker from its own main package
// appends them to its own serve and migrate commands, so it answers to the same
// commands as orderflow's binaries.
//
// Each command reads only the settings it uses, through getenv, and writes to
// the stdout and stderr it is given; none is read before the command runs.
package operator

import (
	"io"
	"os"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/ingress/refunds"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/worker"
)

// WorkerCommands are the worker binary's commands but serve and migrate, in the
// order its usage lists them.
func WorkerCommands(getenv func(string) string, stdout, stderr io.Writer) []cli.Command {
	return WorkerCommandsWith(getenv, stdout, stderr, Extra{})
}

// Extra is what the commands know of the kinds a binary adds beside orders and
// refunds (package orderflow's): their names and envelopes, to tell their dead
// letters apart, and their workflows, for the shadow's replayer.
type Extra struct {
	Kinds     []ingress.Kind
	Workflows func(sdkworker.WorkflowRegistry)
}

// letters tell every kind of the binary apart in dead letters.
func (x Extra) letters() consumer.KindNames { return LetterKinds(x.Kinds...) }

// names are the kinds' names, for --kind.
func (x Extra) names() []string {
	out := []string{order.Kind, refund.Kind}
	for _, k := range x.Kinds {
		out = append(out, k.Name())
	}
	return out
}

// register registers every workflow the binary runs.
func (x Extra) register(r sdkworker.WorkflowRegistry) {
	worker.RegisterWorkflows(r)
	if x.Workflows != nil {
		x.Workflows(r)
	}
}

// WorkerCommandsWith are WorkerCommands of a binary that runs kinds of its own.
func WorkerCommandsWith(getenv func(string) string, stdout, stderr io.Writer, x Extra) []cli.Command {
	return []cli.Command{
		bootstrapCommand(getenv, stdout),
		reconcileReportCommand(getenv, stdout),
		findingsListCommand(getenv, stdout),
		findingsAckCommand(getenv, stdout),
		tenantsListCommand(getenv, stdout),
		ordersShowCommand(getenv, stdout),
		ordersRepairCommand(getenv, stdout, stderr),
		dlqListCommand(getenv, stdout, x),
		dlqShowCommand(getenv, stdout, stderr, x),
		dlqPurgeCommand(getenv, stdout, x),
		dlqRedriveCommand(getenv, stdout, x),
		shadowCommand(getenv, stdout, stderr, x),
		customersReceiptCommand(getenv, os.Stdin, stdout, stderr),
		customersKeyCommand(getenv, stdout),
		customersReapplyCommand(getenv, stdout, stderr),
		customersRewrapCommand(getenv, stdout),
	}
}

// APICommands are the API binary's commands but serve and migrate: keys and
// limits. It takes stderr as WorkerCommands does, though none of them writes
// there yet: the binary reports their errors on its own stderr.
func APICommands(getenv func(string) string, stdout, stderr io.Writer) []cli.Command {
	return []cli.Command{
		keysCreateCommand(getenv, stdout),
		keysListCommand(getenv, stdout),
		keysRevokeCommand(getenv, stdout),
		limitsSetCommand(getenv, stdout),
		limitsClearCommand(getenv, stdout),
		limitsListCommand(getenv, stdout),
	}
}

// LetterKinds tells orderflow's kinds (orders, refund requests) and extra ones
// apart in dead letters; only their names and envelopes are read. The dlq commands and the
// worker's console use it.
func LetterKinds(extra ...ingress.Kind) consumer.KindNames {
	return consumer.NamesOf(append([]ingress.Kind{orders.New(nil, nil), refunds.New(nil, nil, intake.Starter{})}, extra...)...)
}
