// Package ingress names what differs between workflow kinds. The ingresses
// (intake, httpapi, consumer) do the rest once for every kind: the claim and
// reclaim of a key, stored-response replay, Prefer: wait, one identity across
// HTTP, plain events and CloudEvents, the dead-letter queue, quotas, fairness and
// problems. A kind says only its name, how its requests decode, what makes two of
// them the same, and how its workflow starts and answers.
package ingress

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Request is a decoded, validated request of some kind.
type Request interface {
	// Fingerprint decides "same request": it is stored with the key.
	Fingerprint() []byte
	// Same reports whether a stored fingerprint, of any version, is this request's.
	Same(stored []byte) bool
}

// View is a kind's answer for one of its workflows, as it stands.
type View struct {
	ID   string
	Body []byte // the JSON answer a client reads, and a key's replays
	// Final: the workflow has settled; a client that waited gets 201.
	Final bool
	// Fingerprint of the request that made it; nil when not known.
	Fingerprint []byte
}

// ErrNoView is View's answer for a workflow whose kind has no record of it.
var ErrNoView = errors.New("no record of the workflow")

// Run is a started workflow; Get waits for its end.
type Run interface {
	Get(ctx context.Context, valuePtr any) error
}

// Kind is one kind of workflow as the ingresses start it.
type Kind interface {
	// Name begins the kind's workflow IDs and scopes its keys and events
	// (identity.StoredKey); a lower-case word.
	Name() string
	// PublicID is the ID clients know a workflow of the kind by.
	PublicID(workflowID string) string
	// Envelope is how events of the requests topic carry the kind's requests.
	Envelope() Envelope
	// Decode reads and validates the payload an event of the kind carries; every
	// error is a *FieldError.
	Decode(payload json.RawMessage) (Request, error)
	// Admit refuses a request the kind cannot take now (a *Refusal), before its
	// workflow starts; nil admits it.
	Admit(ctx context.Context, tenant string, req Request) error
	// Start starts the request's workflow under workflowID, or finds it: a
	// running or closed workflow absorbs the duplicate.
	Start(ctx context.Context, tenant, workflowID string, req Request) (Run, error)
	// StartNew starts it unless the ID exists, running or closed: created says.
	StartNew(ctx context.Context, tenant, workflowID string, req Request) (created bool, err error)
	// StartSettled starts or finds it and waits, up to wait, for it to settle in
	// one call (Update-with-Start); on any error the caller starts it with Start.
	StartSettled(ctx context.Context, tenant, workflowID string, req Request, wait time.Duration) (View, error)
	// Placed is the fingerprint of the request an existing workflow runs.
	Placed(ctx context.Context, workflowID string) ([]byte, error)
	// Record makes the request readable before its client hears of it.
	Record(ctx context.Context, tenant, workflowID string, req Request) (View, error)
	// View is the workflow's answer as it stands; ErrNoView when not recorded.
	View(ctx context.Context, tenant, workflowID string) (View, error)
}

// Ledgered is a kind whose read model is a table of the ledger's PostgreSQL
// database. The key claim and the event log ask it in their own statements
// whether a workflow already recorded its request, which saves a round trip on
// every new key; a kind without it is asked by View when its key is claimed.
type Ledgered interface {
	Kind
	// FingerprintQuery is the SQL query of the fingerprint of the request the
	// workflow recorded: one row when recorded (NULL for a request older than
	// fingerprints), none when not. tenant and workflowID are SQL expressions of
	// the statement that embeds it: placeholders or columns.
	FingerprintQuery(tenant, workflowID string) string
}

// Envelope is how events carry a kind's requests: a plain event holds the request
// in its member Field, beside eventId and tenant; a CloudEvent of type
// CloudEventType holds it as its data.
type Envelope struct {
	Field          string
	CloudEventType string
}

// FieldError names the part of the input that is wrong.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Refusal is a request its kind cannot take now, or an operation its workflow
// refuses: the client gets the problem Problem (one of docs/problems:
// "not-found", "not-cancellable", "order-not-refundable") with Detail, and
// nothing starts.
type Refusal struct {
	Problem string
	Detail  string
}

func (e *Refusal) Error() string { return e.Detail }
