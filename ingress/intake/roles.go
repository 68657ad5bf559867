package intake

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/internal/fairness"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/platform/config"
	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/workflows"
)

// Setup is what both ingresses start orders with: the ledger's pool and the
// workflows of one task queue, started with one policy.
type Setup struct {
	Pool      *pgxpool.Pool
	Temporal  client.Client
	TaskQueue string
	// Fairness gives each order's tasks its tenant as their fairness key.
	Fairness fairness.Weights
	Policy   workflows.Policy
	Logger   *slog.Logger
	// Codec is the Temporal client's payload encryption (nil: none).
	Codec *payloadcodec.Codec
	// Intents reads an order's intent for what its customer must do (nil: orders
	// waiting on their customer show no next action).
	Intents IntentReader
	// Eager asks for each workflow's first task inline with its start, when a
	// worker of the task queue runs on the same client (the worker's consumer):
	// see worker.Options.Eager, which it goes with.
	Eager bool
}

// IntentReader reads PaymentIntents from the provider.
type IntentReader interface {
	RetrieveIntent(ctx context.Context, intentID string) (provider.Intent, error)
}

func (s Setup) workflows() *Temporal {
	dc := converter.GetDefaultDataConverter()
	if s.Codec != nil {
		dc, _ = payloadcodec.Converters(s.Codec)
	}
	t := NewTemporal(s.Temporal, dc, s.TaskQueue, s.Fairness, s.Policy)
	t.eager = s.Eager
	return t
}

// NewAPI is the intake of the API process. keys is its idempotency store, which
// the process also purges.
func NewAPI(s Setup, keys *idempotency.Store) *Requests {
	r := newRequests(keys, orderstore.New(s.Pool), s.workflows(), s.Logger)
	r.intents = s.Intents
	return r
}

// NewConsumer is the intake of the worker's Kafka ingress, deduplicating the
// events of consumer group: orders, and the more kinds given.
func NewConsumer(s Setup, group string, more ...ingress.Kind) *Events {
	return newEvents(idempotency.NewEvents(s.Pool), s.workflows(), group, more...)
}

// PolicyFromEnv reads how orders treat time (CANCEL_WINDOW, PAYMENT_LOOKUP_DELAY,
// PAYMENT_ACTION_TIMEOUT, PAYMENT_POLL_INTERVAL): both ingresses start workflows
// with it, so both processes read it alike.
func PolicyFromEnv(e *config.Env) workflows.Policy {
	p := workflows.Policy{
		CancelWindow:  e.Duration("CANCEL_WINDOW", 0),
		LookupDelay:   e.Duration("PAYMENT_LOOKUP_DELAY", workflows.DefaultLookupDelay),
		ActionTimeout: e.Duration("PAYMENT_ACTION_TIMEOUT", workflows.DefaultActionTimeout),
		IntentPoll:    e.Duration("PAYMENT_POLL_INTERVAL", workflows.DefaultIntentPoll),
	}
	e.Invalid(p.Check())
	return p
}
