// Package intake turns outside input into idempotent workflow starts, the same way
// for HTTP requests and Kafka events and for every kind (ingress.Kind): the
// workflow ID derived from tenant, kind and key, the request's fingerprint
// claimed with the key or recorded with the event, and a start that a duplicate
// can never turn into a second workflow. It knows no kind.
package intake

import (
	"context"
	"errors"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/idempotency"
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
	// Status and Body are the response recorded for the key: 202 with the
	// kind's answer as accepted, or 201 when the caller waited and it settled.
	Status     int
	Body       []byte
	RetryAfter time.Duration
	// KeyExpires is when the Idempotency-Key's record expires (Created and
	// Replayed by a key): zero when not known.
	KeyExpires time.Time
	StartTook  time.Duration // the plain workflow start's latency, when Created (0 when the start waited: Update-with-Start)
	Err        error
}

// Request is a decoded, validated request of some kind.
type Request = ingress.Request

// Filter narrows a list of a tenant's workflows of one kind, newest first: by
// customer or status, or to the one a key made (IdempotencyKey or EventID).
// The kind checks the values it knows (a status).
type Filter struct {
	CustomerID     string
	Status         string
	Limit          int
	Cursor         string
	IdempotencyKey string
	EventID        string
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
	Processed(ctx context.Context, group, tenant, eventID, workflowID string, recorded idempotency.Query) (bool, []byte, error)
	MarkProcessed(ctx context.Context, group, tenant, eventID string, fingerprint []byte, workflowID string) (bool, []byte, error)
}

// Run is a started workflow; Get waits for its end.
type Run = ingress.Run

var (
	_ KeyStore = (*idempotency.Store)(nil)
	_ EventLog = (*idempotency.Events)(nil)
)

// Errors of a kind's reads.
var (
	// ErrNotFound: the tenant has no such workflow of the kind.
	ErrNotFound = errors.New("not found")
	// ErrBadCursor is a list cursor this service did not issue.
	ErrBadCursor = errors.New("bad cursor")
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

// recordedQuery is the kind's query of what a workflow recorded, when its read
// model is in the ledger's database (nil otherwise).
func recordedQuery(k ingress.Kind) idempotency.Query {
	if l, ok := k.(ingress.Ledgered); ok {
		return l.FingerprintQuery
	}
	return nil
}
