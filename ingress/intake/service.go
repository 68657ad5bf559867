package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
)

// Source is the ingress a key comes from (see order.Source).
type Source = order.Source

const (
	// FromHTTP: the key is an Idempotency-Key; its record keeps the response to replay.
	FromHTTP = order.FromHTTP
	// FromEvent: the key is an event's eventId, deduplicated per consumer group and tenant.
	FromEvent = order.FromEvent
)

// Kind is what Place did.
type Kind int

const (
	// Created: the order's workflow was started by this call.
	Created Kind = iota
	// Replayed: the key already made its order. HTTP: Status and Body are the first
	// response, to send again byte for byte. Events: a duplicate.
	Replayed
	// Mismatch: the key was used with a different request.
	Mismatch
	// InFlight: another request with the key is being handled; try after RetryAfter.
	InFlight
	// Unavailable: a dependency failed (Err says which); retry with the same key.
	Unavailable
)

// Outcome is the typed result of Place.
type Outcome struct {
	Kind    Kind
	OrderID string
	// Status and Body are the response recorded for the key: 202 with the order as
	// accepted, or 201 when the caller waited and the order settled.
	Status     int
	Body       []byte
	RetryAfter time.Duration
	StartTook  time.Duration // the workflow start's latency, when Created
	Err        error
}

// KeyStore is the idempotency_keys table.
type KeyStore interface {
	Claim(ctx context.Context, tenant, key string, fp idempotency.Print, workflowID string, lease time.Duration) (idempotency.Outcome, idempotency.Record, error)
	Complete(ctx context.Context, tenant, key string, fingerprint []byte, status int, body []byte) error
	Unlock(ctx context.Context, tenant, key string) error
	Lookup(ctx context.Context, tenant, key string) (workflowID string, found bool, err error)
}

// EventLog is the processed_events table.
type EventLog interface {
	Processed(ctx context.Context, group, tenant, eventID string) (bool, []byte, error)
	MarkProcessed(ctx context.Context, group, tenant, eventID string, fingerprint []byte, workflowID string) (bool, []byte, error)
}

// OrderStore is the orders read model.
type OrderStore interface {
	Record(ctx context.Context, o order.Order) (orderstore.View, error)
	Get(ctx context.Context, tenant, id string) (orderstore.View, error)
	GetByWorkflow(ctx context.Context, tenant, workflowID string) (orderstore.View, error)
	List(ctx context.Context, tenant string, f orderstore.Filter) ([]orderstore.View, string, error)
}

// Workflows runs OrderWorkflow.
type Workflows interface {
	// Start starts the order's workflow, or finds it: never a second one.
	Start(ctx context.Context, o order.Order) (Run, error)
	// StartNew starts the order's workflow unless its ID exists (running, or closed
	// and retained): created says which.
	StartNew(ctx context.Context, o order.Order) (created bool, err error)
	// Cancel asks the order's workflow to cancel and returns the status it settled in.
	Cancel(ctx context.Context, workflowID string) (order.Status, error)
}

// Run is a started workflow; Get waits for its end.
type Run interface {
	Get(ctx context.Context, valuePtr any) error
}

var (
	_ KeyStore   = (*idempotency.Store)(nil)
	_ EventLog   = (*idempotency.Events)(nil)
	_ OrderStore = (*orderstore.Store)(nil)
)

// Deps are the service's dependencies; Events and Group only where events arrive.
type Deps struct {
	Keys      KeyStore
	Events    EventLog
	Orders    OrderStore
	Workflows Workflows
	Group     string
	Logger    *slog.Logger
}

// Service is the one way into orderflow: both ingresses place and cancel orders
// through it, so every idempotency rule lives here.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service { return &Service{d: d} }

// startBudget bounds the critical section of a placement (claim, start, record,
// store the response). It runs detached from the caller's context, so a client that
// hangs up cannot leave it half done.
const startBudget = 10 * time.Second

// Place turns a keyed request into at most one order. wait > 0 waits up to that long
// for the order to settle (HTTP's Prefer: wait).
func (s *Service) Place(ctx context.Context, tenant string, src Source, key string, req Request, wait time.Duration) Outcome {
	o := req.Order(tenant, order.WorkflowID(tenant, src, key))
	switch src {
	case FromHTTP:
		return s.placeRequest(ctx, o, key, req, wait)
	case FromEvent:
		return s.placeEvent(ctx, o, key, req)
	}
	return unavailable("intake", fmt.Errorf("unknown source %q", src))
}

func (s *Service) placeRequest(ctx context.Context, o order.Order, key string, req Request, wait time.Duration) Outcome {
	lease := wait + startBudget
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lease)
	defer cancel()

	value := Fingerprint(req)
	fp := idempotency.Print{Value: value, Matches: func(stored []byte) bool {
		return bytes.Equal(stored, value) || SameRequest(stored, req) // the first is the usual case, and cheaper
	}}
	claim, rec, err := s.d.Keys.Claim(cctx, o.Tenant, key, fp, o.WorkflowID, lease)
	if err != nil {
		return unavailable("idempotency store", err)
	}
	if claim == idempotency.Claimed && rec.WorkflowID != o.WorkflowID {
		// Taken over from a request that died: its workflow may exist, under the
		// ID derived when the key was first claimed.
		o = req.Order(o.Tenant, rec.WorkflowID)
	}
	if claim == idempotency.Claimed && rec.OrderRecorded {
		// Postgres outlives Temporal's retention and the key's record: an order that
		// exists answers, and no workflow starts again for it.
		if done, ok := s.existing(cctx, o, key, req); ok {
			return done
		}
	}
	out := Outcome{OrderID: order.IDFor(rec.WorkflowID)}
	switch claim {
	case idempotency.Replay:
		out.Kind, out.Status, out.Body = Replayed, rec.Status, rec.Body
		return out
	case idempotency.Mismatch:
		out.Kind = Mismatch
		return out
	case idempotency.InFlight:
		out.Kind, out.RetryAfter = InFlight, rec.RetryAfter
		return out
	}

	began := time.Now()
	run, err := s.d.Workflows.Start(cctx, o)
	out.StartTook = time.Since(began)
	var view orderstore.View
	if err == nil {
		// The read model has the order before the client hears of it.
		view, err = s.d.Orders.Record(cctx, o)
	}
	if err != nil {
		// The start may have happened: the key keeps its fingerprint and only
		// drops its lease, so a retry lands on the same workflow or gets 422.
		if rerr := s.d.Keys.Unlock(cctx, o.Tenant, key); rerr != nil {
			s.d.Logger.WarnContext(ctx, "unlock idempotency key", "err", rerr)
		}
		return unavailable("workflow start", err)
	}

	out.Kind, out.Status = Created, http.StatusAccepted
	if wait > 0 {
		if out.Status, view, err = s.await(ctx, cctx, run, o, wait); err != nil {
			return unavailable("order read", err)
		}
	}
	out.Body, _ = json.Marshal(view)
	if err := s.d.Keys.Complete(cctx, o.Tenant, key, nil, out.Status, out.Body); err != nil {
		// Not the client's problem: a retry re-claims after the lease and finds the
		// same workflow.
		s.d.Logger.WarnContext(ctx, "store idempotent response", "err", err)
	}
	return out
}

// await waits up to wait (on the client's ctx) for the order's workflow to end and
// returns the order as it stands: 201 if it ended (successfully or not: the order
// says which), 202 if it still runs.
func (s *Service) await(ctx, cctx context.Context, run Run, o order.Order, wait time.Duration) (int, orderstore.View, error) {
	status := http.StatusAccepted
	wctx, wcancel := context.WithTimeout(ctx, wait)
	err := run.Get(wctx, nil)
	wcancel()
	if wctx.Err() == nil || err == nil {
		status = http.StatusCreated
	}
	view, err := s.d.Orders.Get(cctx, o.Tenant, o.ID)
	return status, view, err
}

// existing answers a claimed key whose order is already in Postgres: a request
// resent after its key's record expired (and perhaps after Temporal deleted the
// workflow). The same request gets the order as it stands; another body with the key
// gets Mismatch, and the key is bound again to the order's own request. ok is false
// when there is no such order (or Postgres cannot say), and the start goes on.
func (s *Service) existing(ctx context.Context, o order.Order, key string, req Request) (Outcome, bool) {
	view, err := s.d.Orders.GetByWorkflow(ctx, o.Tenant, o.WorkflowID)
	if err != nil {
		return Outcome{}, false
	}
	body, _ := json.Marshal(view)
	res := Outcome{Kind: Replayed, OrderID: view.ID, Status: http.StatusAccepted, Body: body}
	if view.Fingerprint != nil && !SameRequest(view.Fingerprint, req) {
		res = Outcome{Kind: Mismatch, OrderID: view.ID}
	}
	if err := s.d.Keys.Complete(ctx, o.Tenant, key, view.Fingerprint, http.StatusAccepted, body); err != nil {
		s.d.Logger.WarnContext(ctx, "store idempotent response", "err", err)
	}
	return res, true
}

// PlaceEvent places the order of an event. processed_events is read first: it is
// the dedup that outlives Temporal's retention, and it tells a redelivery from an
// eventId reused with another order.
func (s *Service) PlaceEvent(ctx context.Context, tenant, eventID string, req Request) Outcome {
	return s.placeEvent(ctx, req.Order(tenant, order.WorkflowID(tenant, FromEvent, eventID)), eventID, req)
}

func (s *Service) placeEvent(ctx context.Context, o order.Order, eventID string, req Request) Outcome {
	if s.d.Events == nil {
		return unavailable("intake", errors.New("events are not taken here"))
	}
	out := Outcome{OrderID: o.ID, Kind: Replayed}
	// same: a row older than fingerprints (nil) counts as this event.
	same := func(stored []byte) bool { return stored == nil || SameRequest(stored, req) }
	done, stored, err := s.d.Events.Processed(ctx, s.d.Group, o.Tenant, eventID)
	switch {
	case err != nil:
		return unavailable("event log", err)
	case done && !same(stored):
		out.Kind = Mismatch
		return out
	case done:
		return out
	}
	began := time.Now()
	created, err := s.d.Workflows.StartNew(ctx, o)
	if err != nil {
		return unavailable("workflow start", err)
	}
	out.StartTook = time.Since(began)
	_, stored, err = s.d.Events.MarkProcessed(ctx, s.d.Group, o.Tenant, eventID, Fingerprint(req), o.WorkflowID)
	switch {
	case err != nil:
		return unavailable("event log", err)
	case !same(stored):
		// A concurrent delivery with another order got here first: the start found
		// its workflow and changed nothing.
		out.Kind = Mismatch
	case created:
		// The start decides, not the row: of two deliveries in one batch, the row
		// may be written by the one whose start found the workflow.
		out.Kind = Created
	}
	return out
}

func unavailable(what string, err error) Outcome {
	return Outcome{Kind: Unavailable, Err: &UnavailableError{What: what, Err: err}}
}

// UnavailableError is a dependency that failed; the same call may succeed later.
type UnavailableError struct {
	What string
	Err  error
}

func (e *UnavailableError) Error() string { return e.What + ": " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Errors of Cancel.
var (
	// ErrNotFound: the tenant has no such order.
	ErrNotFound = errors.New("no such order")
	// errNotCancellable: the workflow refused the cancel or has closed.
	errNotCancellable = errors.New("not cancellable")
)

// NotCancellableError is an order past cancelling: settled otherwise, fulfilled, or
// being cancelled already.
type NotCancellableError struct{ Status order.Status }

func (e *NotCancellableError) Error() string { return "the order is " + string(e.Status) }

// Cancel cancels one of the tenant's orders (refunding it if it was paid) and returns
// it as it stands after. Cancelling a cancelled order answers the same.
func (s *Service) Cancel(ctx context.Context, tenant, orderID string) (orderstore.View, error) {
	view, err := s.get(ctx, tenant, orderID)
	if err != nil {
		return view, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	status, err := s.d.Workflows.Cancel(cctx, view.WorkflowID)
	switch {
	case errors.Is(err, errNotCancellable):
		now, gerr := s.get(ctx, tenant, orderID)
		if gerr == nil && now.Status == order.StatusCancelled {
			return now, nil // cancelling twice answers the same
		}
		if gerr == nil {
			view = now
		}
		return view, &NotCancellableError{Status: view.Status}
	case err != nil:
		return view, &UnavailableError{What: "cancel update", Err: err}
	case status != order.StatusCancelled:
		// Accepted while the charge was in flight, but the order settled otherwise
		// (declined, failed): nothing to cancel.
		return view, &NotCancellableError{Status: status}
	}
	return s.get(ctx, tenant, orderID)
}

// Get returns one of the tenant's orders.
func (s *Service) Get(ctx context.Context, tenant, orderID string) (orderstore.View, error) {
	return s.get(ctx, tenant, orderID)
}

// ErrBadCursor is a list cursor this service did not issue.
var ErrBadCursor = orderstore.ErrBadCursor

// Filter narrows a list; IdempotencyKey or EventID finds the order a key made.
type Filter struct {
	orderstore.Filter
	IdempotencyKey string
	EventID        string
}

// List returns a page of the tenant's orders, newest first, and the next cursor.
func (s *Service) List(ctx context.Context, tenant string, f Filter) ([]orderstore.View, string, error) {
	switch {
	case f.EventID != "":
		f.WorkflowID = order.WorkflowID(tenant, FromEvent, f.EventID)
	case f.IdempotencyKey != "":
		// The key's record knows its workflow even if the ID scheme changed since.
		wf, found, err := s.d.Keys.Lookup(ctx, tenant, f.IdempotencyKey)
		if err != nil {
			return nil, "", &UnavailableError{What: "idempotency store", Err: err}
		}
		if !found {
			wf = order.WorkflowID(tenant, FromHTTP, f.IdempotencyKey)
		}
		f.WorkflowID = wf
	}
	views, next, err := s.d.Orders.List(ctx, tenant, f.Filter)
	if err != nil && !errors.Is(err, ErrBadCursor) {
		err = &UnavailableError{What: "order list", Err: err}
	}
	return views, next, err
}

func (s *Service) get(ctx context.Context, tenant, orderID string) (orderstore.View, error) {
	view, err := s.d.Orders.Get(ctx, tenant, orderID)
	switch {
	case errors.Is(err, orderstore.ErrNotFound):
		return view, ErrNotFound
	case err != nil:
		return view, &UnavailableError{What: "order read", Err: err}
	}
	return view, nil
}
