package orderflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/platform/records"
)

// Recorded is ingress.Kind for a kind whose workflows are recorded in
// kind_records: the kind says what is its own (Spec), Recorded does the rest of
// the ingress's contract the same way for every such kind.
type Recorded[In any] struct {
	spec    Spec[In]
	starter intake.Starter
	records *records.Store
}

// Spec is what a recorded kind says of itself.
type Spec[In any] struct {
	// Name begins its workflow IDs and scopes its keys: a lower-case word.
	Name string
	// Prefix begins its public IDs ("shp_").
	Prefix string
	// Envelope is how events of the requests topic carry its requests.
	Envelope ingress.Envelope
	// Decode reads and validates a request (a POST's body, an event's member);
	// every error an *ingress.FieldError.
	Decode func(json.RawMessage) (ingress.Request, error)
	// Workflow is its workflow function; Input its input for a request, given
	// the workflow's tenant, ID and public ID; Fingerprint the fingerprint of the
	// request an input holds.
	Workflow    any
	Input       func(tenant, workflowID, id string, req ingress.Request) In
	Fingerprint func(In) []byte
	// Record is the request's record as it starts: its status and the JSON a
	// client reads before the workflow moves it (records.Store.Move).
	Record func(tenant, workflowID, id string, req ingress.Request) (status string, body []byte)
	// Admit refuses a request the kind cannot take now (nil: every one).
	Admit func(ctx context.Context, tenant string, req ingress.Request) error
}

var _ ingress.Kind = (*Recorded[struct{}])(nil)

// NewRecorded is the kind of s, started by p's starter and recorded in p's records.
func NewRecorded[In any](s Spec[In], p Platform) (*Recorded[In], error) {
	if s.Name == "" || s.Prefix == "" || s.Decode == nil || s.Workflow == nil || s.Input == nil || s.Fingerprint == nil || s.Record == nil {
		return nil, errors.New("a recorded kind needs its name, prefix, decoder, workflow, input, fingerprint and record")
	}
	return &Recorded[In]{spec: s, starter: p.Starter, records: p.Records}, nil
}

// Name is the kind's name.
func (k *Recorded[In]) Name() string { return k.spec.Name }

// PublicID is the kind's ID of a workflow: its prefix and a digest.
func (k *Recorded[In]) PublicID(workflowID string) string {
	return identity.PublicID(k.spec.Prefix, k.spec.Name, workflowID)
}

// Envelope is the kind's on the requests topic.
func (k *Recorded[In]) Envelope() ingress.Envelope { return k.spec.Envelope }

// Decode reads a request of the kind.
func (k *Recorded[In]) Decode(payload json.RawMessage) (ingress.Request, error) {
	return k.spec.Decode(payload)
}

// Admit asks the kind's Admit, if it has one.
func (k *Recorded[In]) Admit(ctx context.Context, tenant string, req ingress.Request) error {
	if k.spec.Admit == nil {
		return nil
	}
	return k.spec.Admit(ctx, tenant, req)
}

func (k *Recorded[In]) input(tenant, workflowID string, req ingress.Request) In {
	return k.spec.Input(tenant, workflowID, k.PublicID(workflowID), req)
}

// Start starts (or finds) the request's workflow.
func (k *Recorded[In]) Start(ctx context.Context, tenant, workflowID string, req ingress.Request) (ingress.Run, error) {
	return k.starter.Start(ctx, tenant, workflowID, k.spec.Workflow, k.input(tenant, workflowID, req))
}

// StartNew starts the request's workflow unless its ID exists.
func (k *Recorded[In]) StartNew(ctx context.Context, tenant, workflowID string, req ingress.Request) (bool, error) {
	return k.starter.StartNew(ctx, tenant, workflowID, k.spec.Workflow, k.input(tenant, workflowID, req))
}

// errNoUpdate: a recorded kind answers a wait by its run's end.
var errNoUpdate = errors.New("a recorded kind answers a wait by its run's end")

// StartSettled is not offered: the ingress starts the workflow and waits for its run.
func (k *Recorded[In]) StartSettled(context.Context, string, string, ingress.Request, time.Duration) (ingress.View, error) {
	return ingress.View{}, errNoUpdate
}

// Placed is the fingerprint of the request an existing workflow runs.
func (k *Recorded[In]) Placed(ctx context.Context, workflowID string) ([]byte, error) {
	var in In
	if err := k.starter.Input(ctx, workflowID, &in); err != nil {
		return nil, err
	}
	return k.spec.Fingerprint(in), nil
}

// Record writes the request's record before its client hears of it.
func (k *Recorded[In]) Record(ctx context.Context, tenant, workflowID string, req ingress.Request) (ingress.View, error) {
	id := k.PublicID(workflowID)
	status, body := k.spec.Record(tenant, workflowID, id, req)
	r, err := k.records.Record(ctx, records.Record{Tenant: tenant, Kind: k.spec.Name, ID: id, WorkflowID: workflowID,
		Status: status, Fingerprint: req.Fingerprint(), Body: body})
	if err != nil {
		return ingress.View{}, fmt.Errorf("record %s: %w", id, err)
	}
	return view(r), nil
}

// View is the workflow's record as it stands.
func (k *Recorded[In]) View(ctx context.Context, tenant, workflowID string) (ingress.View, error) {
	r, err := k.records.GetByWorkflow(ctx, tenant, workflowID)
	switch {
	case errors.Is(err, records.ErrNotFound):
		return ingress.View{}, ingress.ErrNoView
	case err != nil:
		return ingress.View{}, fmt.Errorf("read %s record: %w", k.spec.Name, err)
	}
	return view(r), nil
}
