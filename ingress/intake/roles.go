package intake

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/tenants/fairness"
)

// Setup is what both ingresses start every kind's workflows with: the ledger's
// pool and the workflows of one task queue, started with one policy. A kind's
// own settings (an order's policy) go to the kind.
type Setup struct {
	Pool      *pgxpool.Pool
	Temporal  client.Client
	TaskQueue string
	// Fairness gives each workflow's tasks its tenant as their fairness key.
	Fairness fairness.Weights
	Logger   *slog.Logger
	// Codec is the Temporal client's payload encryption (nil: none).
	Codec *payloadcodec.Codec
	// Eager asks for each workflow's first task inline with its start, when a
	// worker of the task queue runs on the same client (the worker's consumer):
	// see worker.Options.Eager, which it goes with.
	Eager bool
	// Waited gives the workflows started here a caller waits for
	// (fairness.Waited): the API's, not the consumer's.
	Waited bool
	// Customers are the customers' data keys: kinds seal personal values
	// under them (nil: they stay plain).
	Customers *custkeys.Store
}

// Starter is the Setup's starter of workflows, for any kind.
func (s Setup) Starter() Starter {
	dc := converter.GetDefaultDataConverter()
	if s.Codec != nil {
		dc, _ = payloadcodec.Converters(s.Codec)
	}
	return Starter{c: s.Temporal, dc: dc, taskQueue: s.TaskQueue, fair: s.Fairness, eager: s.Eager, waited: s.Waited}
}

// NewAPI is the intake of the API process. keys is its idempotency store, which
// the process also purges.
func NewAPI(s Setup, keys *idempotency.Store) *Requests {
	return NewRequests(keys, s.Logger)
}

// NewConsumer is the intake of the worker's Kafka ingress, deduplicating the
// events of consumer group for the kinds given: the first is the one a plain
// event without any kind's member is refused as.
func NewConsumer(s Setup, group string, kinds ...ingress.Kind) *Events {
	return NewEvents(idempotency.NewEvents(s.Pool), group, kinds...)
}
