package intake

import (
	"context"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/workflows"
)

// Outcome is what a keyed request came to (one set of values for the stores and
// both ingresses).
type Outcome = idempotency.Outcome

// The outcomes a placement answers.
const (
	Created     = idempotency.Created
	Replayed    = idempotency.Replayed
	Mismatch    = idempotency.Mismatch
	InFlight    = idempotency.InFlight
	Unavailable = idempotency.Unavailable
	Refused     = idempotency.Refused
)

// Result is what placing a keyed request did.
type Result struct {
	Kind Outcome
	// ID is the public ID of the request's workflow (an order's ord_...).
	ID string
	// Status and Body are the response recorded for the key: 202 with the order as
	// accepted, or 201 when the caller waited and the order settled.
	Status     int
	Body       []byte
	RetryAfter time.Duration
	// KeyExpires is when the Idempotency-Key's record expires (Created and
	// Replayed by a key): zero when not known.
	KeyExpires time.Time
	StartTook  time.Duration // the plain workflow start's latency, when Created (0 when the start waited: Update-with-Start)
	Err        error
}

// KeyStore is the idempotency_keys table.
type KeyStore interface {
	Claim(ctx context.Context, tenant, key string, fp idempotency.Print, workflowID string, lease time.Duration) (Outcome, idempotency.Record, error)
	Complete(ctx context.Context, tenant, key string, fingerprint []byte, status int, body []byte) error
	Unlock(ctx context.Context, tenant, key string) error
	Lookup(ctx context.Context, tenant, key string) (workflowID string, found bool, err error)
}

// EventLog is the processed_events table.
type EventLog interface {
	Processed(ctx context.Context, group, tenant, eventID, workflowID string) (bool, []byte, error)
	MarkProcessed(ctx context.Context, group, tenant, eventID string, fingerprint []byte, workflowID string) (bool, []byte, error)
}

// OrderStore is the orders read model.
type OrderStore interface {
	Record(ctx context.Context, o order.Order) (orderstore.Row, error)
	Get(ctx context.Context, tenant, id string) (orderstore.Row, error)
	GetByWorkflow(ctx context.Context, tenant, workflowID string) (orderstore.Row, error)
	List(ctx context.Context, tenant string, f orderstore.Filter) ([]orderstore.Row, string, error)
}

// Workflows runs workflows.Order.
type Workflows interface {
	// Start starts the order's workflow, or finds it: never a second one.
	Start(ctx context.Context, o order.Order) (Run, error)
	// StartNew starts the order's workflow unless its ID exists (running, or closed
	// and retained): created says which.
	StartNew(ctx context.Context, o order.Order) (created bool, err error)
	// Placed returns the order an existing workflow runs.
	Placed(ctx context.Context, workflowID string) (order.Order, error)
	// Cancel asks the order's workflow to cancel and returns the status it settled in.
	Cancel(ctx context.Context, workflowID string) (order.Status, error)
	// StartSettled starts (or finds) the order's workflow and returns the order
	// once it is settled for a waiting client, within wait; on any error the
	// caller starts it with Start.
	StartSettled(ctx context.Context, o order.Order, wait time.Duration) (workflows.OrderResult, error)
}

// Run is a started workflow; Get waits for its end.
type Run = ingress.Run

var (
	_ KeyStore   = (*idempotency.Store)(nil)
	_ EventLog   = (*idempotency.Events)(nil)
	_ OrderStore = (*orderstore.Store)(nil)
)

func unavailable(what string, err error) Result {
	return Result{Kind: Unavailable, Err: &UnavailableError{What: what, Err: err}}
}

// UnavailableError is a dependency that failed; the same call may succeed later.
type UnavailableError struct {
	What string
	Err  error
}

func (e *UnavailableError) Error() string { return e.What + ": " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }
