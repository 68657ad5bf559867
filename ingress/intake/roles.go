package intake

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/workflows"
)

// Setup is what both ingresses start orders with: the ledger's pool and the
// workflows of one task queue, started with one policy.
type Setup struct {
	Pool      *pgxpool.Pool
	Temporal  client.Client
	TaskQueue string
	Policy    workflows.Policy
	Logger    *slog.Logger
}

func (s Setup) workflows() *Temporal { return NewTemporal(s.Temporal, s.TaskQueue, s.Policy) }

// NewAPI is the intake of the API process. keys is its idempotency store, which
// the process also purges.
func NewAPI(s Setup, keys *idempotency.Store) *Requests {
	return newRequests(keys, orderstore.New(s.Pool), s.workflows(), s.Logger)
}

// NewConsumer is the intake of the worker's Kafka ingress, deduplicating the
// events of consumer group.
func NewConsumer(s Setup, group string) *Events {
	return newEvents(idempotency.NewEvents(s.Pool), s.workflows(), group)
}
