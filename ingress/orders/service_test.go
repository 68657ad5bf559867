package orders

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/workflows"
)

// Hand-written fakes of the service's dependencies: enough behaviour to check the
// service's rules, no stack.

type fakeKeys struct {
	mu      sync.Mutex
	recs    map[string]*fakeKey
	claimed int
	err     error
	orders  *fakeOrders // a claim says whether its workflow's order is recorded
}

type fakeKey struct {
	fingerprint []byte
	workflowID  string
	status      int
	body        []byte
	locked      bool
}

func (f *fakeKeys) Claim(_ context.Context, tenant, key string, fp idempotency.Print, workflowID string, _ time.Duration) (idempotency.Outcome, idempotency.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, idempotency.Record{}, f.err
	}
	r, ok := f.recs[tenant+"/"+key]
	switch {
	case !ok:
		f.recs[tenant+"/"+key] = &fakeKey{fingerprint: fp.Value, workflowID: workflowID, locked: true}
		f.claimed++
		return idempotency.Claimed, idempotency.Record{WorkflowID: workflowID, Recorded: fp.Recorded != nil && f.orders.has(workflowID)}, nil
	case !fp.Matches(r.fingerprint):
		return idempotency.Mismatch, idempotency.Record{WorkflowID: r.workflowID}, nil
	case r.status == 0 && r.locked:
		return idempotency.InFlight, idempotency.Record{WorkflowID: r.workflowID, RetryAfter: 3 * time.Second}, nil
	case r.status == 0: // taken over
		r.locked = true
		return idempotency.Claimed, idempotency.Record{WorkflowID: r.workflowID, Recorded: fp.Recorded != nil && f.orders.has(r.workflowID)}, nil
	}
	return idempotency.Replayed, idempotency.Record{WorkflowID: r.workflowID, Status: r.status, Body: r.body}, nil
}

func (f *fakeKeys) Complete(_ context.Context, tenant, key string, fp []byte, status int, body []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.recs[tenant+"/"+key]
	r.status, r.body = status, body
	if fp != nil {
		r.fingerprint = fp
	}
	return nil
}

func (f *fakeKeys) Unlock(_ context.Context, tenant, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.recs[tenant+"/"+key]; r != nil && r.status == 0 {
		r.locked = false
	}
	return nil
}

func (f *fakeKeys) Lookup(_ context.Context, tenant, key string) (string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.recs[tenant+"/"+key]; ok {
		return r.workflowID, true, nil
	}
	return "", false, nil
}

type fakeEvents struct {
	seen  map[string][]byte
	reads int
}

func (f *fakeEvents) Processed(_ context.Context, group, tenant, id, _ string, _ idempotency.Query) (bool, []byte, error) {
	f.reads++
	fp, ok := f.seen[group+"/"+tenant+"/"+id]
	return ok, fp, nil
}

func (f *fakeEvents) MarkProcessed(_ context.Context, group, tenant, id string, fp []byte, _ string) (bool, []byte, error) {
	if old, ok := f.seen[group+"/"+tenant+"/"+id]; ok {
		return false, old, nil
	}
	f.seen[group+"/"+tenant+"/"+id] = fp
	return true, fp, nil
}

type fakeOrders struct{ views map[string]orderstore.Row }

func (f *fakeOrders) has(workflowID string) bool {
	_, err := f.GetByWorkflow(context.Background(), "", workflowID)
	return err == nil
}

func (f *fakeOrders) Record(_ context.Context, o order.Order) (orderstore.Row, error) {
	if v, ok := f.views[o.ID]; ok {
		return v, nil
	}
	v := orderstore.Row{ID: o.ID, Status: order.StatusPending, Amount: o.Amount, WorkflowID: o.WorkflowID, Fingerprint: o.Fingerprint()}
	f.views[o.ID] = v
	return v, nil
}

func (f *fakeOrders) GetByWorkflow(_ context.Context, _ string, workflowID string) (orderstore.Row, error) {
	for _, v := range f.views {
		if v.WorkflowID == workflowID {
			return v, nil
		}
	}
	return orderstore.Row{}, orderstore.ErrNotFound
}

func (f *fakeOrders) Get(_ context.Context, _ string, id string) (orderstore.Row, error) {
	v, ok := f.views[id]
	if !ok {
		return v, orderstore.ErrNotFound
	}
	return v, nil
}

func (f *fakeOrders) List(context.Context, string, orderstore.Filter) ([]orderstore.Row, string, error) {
	return nil, "", nil
}

type fakeWorkflows struct {
	started   map[string]int // workflow ID -> starts
	placed    map[string]order.Order
	startErr  error
	cancelled func(workflowID string) (order.Status, error)
}

type fakeRun struct{}

func (fakeRun) Get(context.Context, any) error { return nil }

func (f *fakeWorkflows) Start(_ context.Context, o order.Order) (intake.Run, error) {
	if f.startErr != nil {
		return nil, f.startErr
	}
	f.started[o.WorkflowID]++
	return fakeRun{}, nil
}

// StartSettled is a worker fleet that does not answer the update (an older one):
// the placement falls back to Start.
func (f *fakeWorkflows) StartSettled(context.Context, order.Order, time.Duration) (workflows.OrderResult, error) {
	return workflows.OrderResult{}, errors.New("unknown update settled")
}

func (f *fakeWorkflows) StartNew(_ context.Context, o order.Order) (bool, error) {
	if f.startErr != nil {
		return false, f.startErr
	}
	f.started[o.WorkflowID]++
	if _, ok := f.placed[o.WorkflowID]; !ok {
		f.placed[o.WorkflowID] = o
	}
	return f.started[o.WorkflowID] == 1, nil
}

func (f *fakeWorkflows) Placed(_ context.Context, workflowID string) (order.Order, error) {
	o, ok := f.placed[workflowID]
	if !ok {
		return o, errors.New("no such workflow")
	}
	return o, nil
}

func (f *fakeWorkflows) Cancel(_ context.Context, workflowID string) (order.Status, error) {
	return f.cancelled(workflowID)
}

type fixture struct {
	keys   *fakeKeys
	events *fakeEvents
	orders *fakeOrders
	flows  *fakeWorkflows
	kind   *Kind
	api    *Service
	cons   *intake.Events
}

func newFixture() *fixture {
	orders := &fakeOrders{views: map[string]orderstore.Row{}}
	f := &fixture{
		keys:   &fakeKeys{recs: map[string]*fakeKey{}, orders: orders},
		events: &fakeEvents{seen: map[string][]byte{}},
		orders: orders,
		flows:  &fakeWorkflows{started: map[string]int{}, placed: map[string]order.Order{}},
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.api = NewService(intake.NewRequests(f.keys, logger), f.orders, f.flows, nil, logger)
	f.kind = New(nil, f.flows)
	f.cons = intake.NewEvents(f.events, "g", f.kind)
	return f
}

func request(t *testing.T, body string) Request {
	t.Helper()
	r, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPlaceHTTPCreatesOnceAndReplaysByteForByte(t *testing.T) {
	f := newFixture()
	req := request(t, valid)
	first := f.api.Place(context.Background(), "acme", "k1", req, 0)
	if first.Kind != intake.Created || first.Status != http.StatusAccepted || len(first.Body) == 0 {
		t.Fatalf("first = %+v", first)
	}
	again := f.api.Place(context.Background(), "acme", "k1", req, 0)
	if again.Kind != intake.Replayed || again.Status != first.Status || !bytes.Equal(again.Body, first.Body) || again.ID != first.ID {
		t.Fatalf("replay = %+v, want the first response", again)
	}
	if n := f.flows.started[order.WorkflowID("acme", order.FromHTTP, "k1")]; n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
}

func TestPlaceHTTPMismatchAndInFlight(t *testing.T) {
	f := newFixture()
	f.keys.recs["acme/k1"] = &fakeKey{fingerprint: Fingerprint(request(t, valid)), workflowID: order.WorkflowID("acme", order.FromHTTP, "k1"), locked: true}
	if out := f.api.Place(context.Background(), "acme", "k1", request(t, valid), 0); out.Kind != intake.InFlight || out.RetryAfter != 3*time.Second {
		t.Fatalf("same body while the first runs = %+v, want InFlight after 3s", out)
	}
	other := request(t, `{"customer_id":"cus_1","currency":"usd","items":[{"sku":"sku-1","quantity":3,"unit_amount":1299}],"payment_method":"pm_card_visa"}`)
	if out := f.api.Place(context.Background(), "acme", "k1", other, 0); out.Kind != intake.Mismatch {
		t.Fatalf("other body = %+v, want Mismatch", out)
	}
	if len(f.flows.started) != 0 {
		t.Fatalf("started %v, want nothing", f.flows.started)
	}
}

func TestPlaceHTTPUnavailableKeepsTheFingerprint(t *testing.T) {
	f := newFixture()
	f.flows.startErr = errors.New("temporal down")
	out := f.api.Place(context.Background(), "acme", "k1", request(t, valid), 0)
	var ue *intake.UnavailableError
	if out.Kind != intake.Unavailable || !errors.As(out.Err, &ue) || ue.What != "workflow start" {
		t.Fatalf("out = %+v, want Unavailable(workflow start)", out)
	}
	f.flows.startErr = nil
	// The start may have happened: another body with the key is refused at once...
	other := request(t, strings.Replace(valid, `"quantity":2`, `"quantity":5`, 1))
	if out := f.api.Place(context.Background(), "acme", "k1", other, 0); out.Kind != intake.Mismatch {
		t.Fatalf("other body after a failed start = %+v, want Mismatch", out)
	}
	// ...and the same body takes the key over.
	if out := f.api.Place(context.Background(), "acme", "k1", request(t, valid), 0); out.Kind != intake.Created {
		t.Fatalf("retry = %+v, want Created", out)
	}
	f.keys.err = errors.New("postgres down")
	if out := f.api.Place(context.Background(), "acme", "k2", request(t, valid), 0); out.Kind != intake.Unavailable {
		t.Fatalf("claim failure = %+v, want Unavailable", out)
	}
}

// The key's record expired and was purged, and Temporal deleted the workflow: the
// order in Postgres answers a resent request, no workflow starts again, and another
// body with the key is refused.
func TestPlaceHTTPAfterTheKeyExpiredAnswersFromPostgres(t *testing.T) {
	f := newFixture()
	first := f.api.Place(context.Background(), "acme", "k1", request(t, valid), 0)
	delete(f.keys.recs, "acme/k1") // purged
	f.flows.started = map[string]int{}
	again := f.api.Place(context.Background(), "acme", "k1", request(t, valid), 0)
	if again.Kind != intake.Replayed || again.ID != first.ID || len(f.flows.started) != 0 {
		t.Fatalf("resent after expiry = %+v, %d starts; want the same order, no start", again, len(f.flows.started))
	}
	delete(f.keys.recs, "acme/k1")
	other := request(t, strings.Replace(valid, `"quantity":2`, `"quantity":5`, 1))
	if out := f.api.Place(context.Background(), "acme", "k1", other, 0); out.Kind != intake.Mismatch || len(f.flows.started) != 0 {
		t.Fatalf("another body after expiry = %+v, want Mismatch", out)
	}
	if out := f.api.Place(context.Background(), "acme", "k1", other, 0); out.Kind != intake.Mismatch {
		t.Fatalf("again = %+v: the key must stay bound to the order's request", out)
	}
	if out := f.api.Place(context.Background(), "acme", "k1", request(t, valid), 0); out.Kind != intake.Replayed {
		t.Fatalf("the original request = %+v, want Replayed", out)
	}
}

func TestPlaceEventDeduplicates(t *testing.T) {
	f := newFixture()
	req := request(t, valid)
	if out := f.cons.SubmitEvent(context.Background(), f.kind, "acme", "e1", req); out.Kind != intake.Created {
		t.Fatalf("first = %+v", out)
	}
	if out := f.cons.SubmitEvent(context.Background(), f.kind, "acme", "e1", req); out.Kind != intake.Replayed {
		t.Fatalf("duplicate = %+v, want Replayed", out)
	}
	if n := f.flows.started[order.WorkflowID("acme", order.FromEvent, "e1")]; n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
	// Another tenant's event with the same eventId is another order.
	if out := f.cons.SubmitEvent(context.Background(), f.kind, "other", "e1", req); out.Kind != intake.Created {
		t.Fatalf("same eventId, other tenant = %+v, want Created", out)
	}
	// The same eventId with another order is not a duplicate.
	other := request(t, strings.Replace(valid, `"quantity":2`, `"quantity":5`, 1))
	if out := f.cons.SubmitEvent(context.Background(), f.kind, "acme", "e1", other); out.Kind != intake.Mismatch {
		t.Fatalf("reused eventId = %+v, want Mismatch", out)
	}
	// A row recorded before fingerprints counts as the same event.
	f.events.seen["g/acme/legacy"] = nil
	if out := f.cons.SubmitEvent(context.Background(), f.kind, "acme", "legacy", other); out.Kind != intake.Replayed {
		t.Fatalf("legacy row = %+v, want Replayed", out)
	}
}

func TestPlaceCloudEventDeduplicatesBySourceAndID(t *testing.T) {
	f := newFixture()
	req := request(t, valid)
	ctx := context.Background()
	if out := f.cons.SubmitCloudEvent(ctx, f.kind, "acme", "/shop", "e1", req); out.Kind != intake.Created {
		t.Fatalf("first = %+v", out)
	}
	if out := f.cons.SubmitCloudEvent(ctx, f.kind, "acme", "/shop", "e1", req); out.Kind != intake.Replayed {
		t.Fatalf("same source and id = %+v, want Replayed", out)
	}
	// The same id from another source is another event; so is an eventId that
	// equals the id, or the CloudEvent's key.
	key := order.CloudEventKey("/shop", "e1")
	for _, place := range []func() intake.Result{
		func() intake.Result { return f.cons.SubmitCloudEvent(ctx, f.kind, "acme", "/warehouse", "e1", req) },
		func() intake.Result { return f.cons.SubmitEvent(ctx, f.kind, "acme", "e1", req) },
		func() intake.Result { return f.cons.SubmitEvent(ctx, f.kind, "acme", key, req) },
		func() intake.Result { return f.cons.SubmitEvent(ctx, f.kind, "acme", "ce:"+key, req) },
	} {
		if out := place(); out.Kind != intake.Created {
			t.Fatalf("another identity = %+v, want Created", out)
		}
	}
	if n := len(f.flows.started); n != 5 {
		t.Fatalf("%d workflows, want 5", n)
	}
}

func TestCancel(t *testing.T) {
	f := newFixture()
	out := f.api.Place(context.Background(), "acme", "k1", request(t, valid), 0)
	wf := order.WorkflowID("acme", order.FromHTTP, "k1")
	setStatus := func(s order.Status) {
		v := f.orders.views[out.ID]
		v.Status = s
		f.orders.views[out.ID] = v
	}

	if _, err := f.api.Cancel(context.Background(), "acme", "ord_nope"); !errors.Is(err, intake.ErrNotFound) {
		t.Fatalf("unknown order: %v, want ErrNotFound", err)
	}
	f.flows.cancelled = func(id string) (order.Status, error) {
		if id != wf {
			t.Fatalf("cancel sent to %s, want %s", id, wf)
		}
		setStatus(order.StatusCancelled)
		return order.StatusCancelled, nil
	}
	if v, err := f.api.Cancel(context.Background(), "acme", out.ID); err != nil || v.Status != string(order.StatusCancelled) {
		t.Fatalf("cancel = %+v, %v", v, err)
	}
	// The workflow has closed since: cancelling again answers the same.
	f.flows.cancelled = func(string) (order.Status, error) { return "", errNotCancellable }
	if v, err := f.api.Cancel(context.Background(), "acme", out.ID); err != nil || v.Status != string(order.StatusCancelled) {
		t.Fatalf("second cancel = %+v, %v", v, err)
	}
	var nc *ingress.Refusal
	setStatus(order.StatusPaid)
	if _, err := f.api.Cancel(context.Background(), "acme", out.ID); !errors.As(err, &nc) || nc.Problem != "not-cancellable" || nc.Detail != "the order is PAID" {
		t.Fatalf("cancel of a fulfilled order: %v, want NotCancellable(PAID)", err)
	}
	// Accepted while the charge ran, then declined: nothing was cancelled.
	f.flows.cancelled = func(string) (order.Status, error) { return order.StatusPaymentDeclined, nil }
	if _, err := f.api.Cancel(context.Background(), "acme", out.ID); !errors.As(err, &nc) || nc.Detail != "the order is "+string(order.StatusPaymentDeclined) {
		t.Fatalf("cancel answered by a decline: %v", err)
	}
	// Accepted, and carried into the workflow's next run: the order as it stands.
	setStatus(order.StatusPaymentUnknown)
	f.flows.cancelled = func(string) (order.Status, error) { return "", errCancelPending }
	if v, err := f.api.Cancel(context.Background(), "acme", out.ID); err != nil || v.Status != string(order.StatusPaymentUnknown) {
		t.Fatalf("cancel pending = %+v, %v", v, err)
	}
	f.flows.cancelled = func(string) (order.Status, error) { return "", errors.New("deadline exceeded") }
	var ue *intake.UnavailableError
	if _, err := f.api.Cancel(context.Background(), "acme", out.ID); !errors.As(err, &ue) {
		t.Fatalf("cancel with Temporal down: %v, want UnavailableError", err)
	}
}

// The list's values only the order kind knows are checked before any query.
func TestListRefusesWhatTheKindDoesNotKnow(t *testing.T) {
	f := newFixture()
	for field, filter := range map[string]intake.Filter{
		"status":   {Status: "BOGUS"},
		"event_id": {IdempotencyKey: "k", EventID: "e"},
	} {
		var fe *ingress.FieldError
		if _, _, err := f.api.List(context.Background(), "acme", filter); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%+v: %v, want a FieldError on %s", filter, err, field)
		}
	}
	if _, _, err := f.api.List(context.Background(), "acme", intake.Filter{Status: string(order.StatusPaid)}); err != nil {
		t.Fatalf("a known status: %v", err)
	}
}
