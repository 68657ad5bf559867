package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/workflows"
)

// Requests is the HTTP ingress's intake: requests with an Idempotency-Key placed
// as at most one order each, and the tenant's orders read and cancelled.
type Requests struct {
	keys      KeyStore
	orders    OrderStore
	workflows Workflows
	logger    *slog.Logger
	intents   IntentReader // nil: no next actions
}

func newRequests(keys KeyStore, orders OrderStore, workflows Workflows, logger *slog.Logger) *Requests {
	return &Requests{keys: keys, orders: orders, workflows: workflows, logger: logger}
}

// StartBudget bounds the critical section of a placement (claim, start, record,
// store the response). It runs detached from the caller's context, so a client that
// hangs up cannot leave it half done; a stop gives it this long.
const StartBudget = 10 * time.Second

// Place turns a request with an Idempotency-Key into at most one order. wait > 0
// waits up to that long for the order to settle (HTTP's Prefer: wait).
func (s *Requests) Place(ctx context.Context, tenant, key string, req Request, wait time.Duration) Result {
	o := req.Order(tenant, order.WorkflowID(tenant, order.FromHTTP, key))
	lease := wait + StartBudget
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lease)
	defer cancel()

	value := Fingerprint(req)
	fp := idempotency.Print{Value: value, Matches: func(stored []byte) bool {
		return bytes.Equal(stored, value) || SameRequest(stored, req) // the first is the usual case, and cheaper
	}}
	claim, rec, err := s.keys.Claim(cctx, o.Tenant, key, fp, o.WorkflowID, lease)
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
			done.KeyExpires = rec.Expires
			return done
		}
	}
	out := Result{Kind: claim, OrderID: order.IDFor(rec.WorkflowID), Status: rec.Status, Body: rec.Body, RetryAfter: rec.RetryAfter,
		KeyExpires: rec.Expires}
	if claim != idempotency.Claimed {
		return out // Replayed, Mismatch or InFlight
	}

	began := time.Now()
	run, settled, view, err := s.start(ctx, cctx, o, wait, &out)
	if err != nil {
		// The start may have happened: the key keeps its fingerprint and only
		// drops its lease, so a retry lands on the same workflow or gets 422.
		if rerr := s.keys.Unlock(cctx, o.Tenant, key); rerr != nil {
			s.logger.WarnContext(ctx, "unlock idempotency key", "err", rerr)
		}
		return unavailable("workflow start", err)
	}

	out.Kind, out.Status = Created, http.StatusAccepted
	switch {
	case settled != nil:
		if final(settled.Status) {
			out.Status = http.StatusCreated
		}
		if view, err = s.orders.Get(cctx, o.Tenant, o.ID); err != nil {
			return unavailable("order read", err)
		}
	case wait > 0:
		if out.Status, view, err = s.await(ctx, cctx, run, o, wait-time.Since(began)); err != nil {
			return unavailable("order read", err)
		}
	}
	out.Body, _ = json.Marshal(wire.From(view))
	if err := s.keys.Complete(cctx, o.Tenant, key, nil, out.Status, out.Body); err != nil {
		// Not the client's problem: a retry re-claims after the lease and finds the
		// same workflow.
		s.logger.WarnContext(ctx, "store idempotent response", "err", err)
	}
	return out
}

// start starts the order's workflow and records the order. With wait > 0 it first
// tries the start and the wait in one call, answered when the order settles (nil
// run), on the client's context, which a drain cuts short: whatever became of it,
// the plain start (idempotent) is what the answer rests on.
func (s *Requests) start(ctx, cctx context.Context, o order.Order, wait time.Duration, out *Result) (Run, *workflows.OrderResult, orderstore.Row, error) {
	if wait > 0 {
		if res, err := s.workflows.StartSettled(ctx, o, wait); err == nil {
			return nil, &res, orderstore.Row{}, nil // its workflow has recorded the order: its first step
		}
	}
	started := time.Now()
	run, err := s.workflows.Start(cctx, o)
	out.StartTook = time.Since(started)
	if err != nil {
		return nil, nil, orderstore.Row{}, err
	}
	// The read model has the order before the client hears of it.
	view, err := s.orders.Record(cctx, o)
	return run, nil, view, err
}

// final reports the statuses that answer a waiting client 201: the payment's ends
// (an order waiting on its customer answers 202 with where to send them).
func final(s order.Status) bool {
	return workflows.Answered(s) && s != order.StatusActionRequired
}

// await waits up to wait (on the client's ctx) for the order's workflow to end and
// returns the order as it stands: 201 if it ended (successfully or not: the order
// says which), 202 if it still runs.
func (s *Requests) await(ctx, cctx context.Context, run Run, o order.Order, wait time.Duration) (int, orderstore.Row, error) {
	status := http.StatusAccepted
	wctx, wcancel := context.WithTimeout(ctx, wait)
	err := run.Get(wctx, nil)
	wcancel()
	if wctx.Err() == nil || err == nil {
		status = http.StatusCreated
	}
	view, err := s.orders.Get(cctx, o.Tenant, o.ID)
	return status, view, err
}

// existing answers a claimed key whose order is already in Postgres: a request
// resent after its key's record expired (and perhaps after Temporal deleted the
// workflow). The same request gets the order as it stands; another body with the key
// gets Mismatch, and the key is bound again to the order's own request. ok is false
// when there is no such order (or Postgres cannot say), and the start goes on.
func (s *Requests) existing(ctx context.Context, o order.Order, key string, req Request) (Result, bool) {
	view, err := s.orders.GetByWorkflow(ctx, o.Tenant, o.WorkflowID)
	if err != nil {
		return Result{}, false
	}
	body, _ := json.Marshal(wire.From(view))
	res := Result{Kind: Replayed, OrderID: view.ID, Status: http.StatusAccepted, Body: body}
	if view.Fingerprint != nil && !SameRequest(view.Fingerprint, req) {
		res = Result{Kind: Mismatch, OrderID: view.ID}
	}
	if err := s.keys.Complete(ctx, o.Tenant, key, view.Fingerprint, http.StatusAccepted, body); err != nil {
		s.logger.WarnContext(ctx, "store idempotent response", "err", err)
	}
	return res, true
}

// Errors of Cancel.
var (
	// ErrNotFound: the tenant has no such order.
	ErrNotFound = errors.New("no such order")
	// errNotCancellable: the workflow refused the cancel or has closed.
	errNotCancellable = errors.New("not cancellable")
	// errCancelPending: the workflow accepted the cancel, and carries it out in
	// its next run.
	errCancelPending = errors.New("cancel pending")
)

// NotCancellableError is an order past cancelling: settled otherwise, fulfilled, or
// being cancelled already.
type NotCancellableError struct{ Status order.Status }

func (e *NotCancellableError) Error() string { return "the order is " + string(e.Status) }

// Cancel cancels one of the tenant's orders (refunding it if it was paid) and returns
// it as it stands after. Cancelling a cancelled order answers the same.
func (s *Requests) Cancel(ctx context.Context, tenant, orderID string) (wire.Order, error) {
	row, err := s.cancel(ctx, tenant, orderID)
	return wire.From(row), err
}

func (s *Requests) cancel(ctx context.Context, tenant, orderID string) (orderstore.Row, error) {
	view, err := s.get(ctx, tenant, orderID)
	if err != nil {
		return view, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	status, err := s.workflows.Cancel(cctx, view.WorkflowID)
	switch {
	case errors.Is(err, errCancelPending):
		return s.get(ctx, tenant, orderID) // the order as it stands; CANCELLED once settled
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
//
// An order waiting on its customer carries the intent's next action, read from
// the provider now (never stored: it holds the intent's client secret). Only
// here: neither lists nor the responses stored for an Idempotency-Key carry it.
// If the provider does not answer, the order is shown without it.
func (s *Requests) Get(ctx context.Context, tenant, orderID string) (wire.Order, error) {
	row, err := s.get(ctx, tenant, orderID)
	v := wire.From(row)
	if err != nil || v.Status != order.StatusActionRequired || s.intents == nil || v.PaymentRef == "" {
		return v, err
	}
	pi, err := s.intents.RetrieveIntent(ctx, v.PaymentRef)
	switch {
	case err != nil:
		s.logger.Warn("read the next action of an order", "order_id", v.ID, "err", err)
	case pi.Metadata["order_id"] == v.ID: // the intent is the order's, as its metadata says
		v.NextAction = pi.NextAction
	}
	return v, nil
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
func (s *Requests) List(ctx context.Context, tenant string, f Filter) ([]wire.Order, string, error) {
	switch {
	case f.EventID != "":
		f.WorkflowID = order.WorkflowID(tenant, order.FromEvent, f.EventID)
	case f.IdempotencyKey != "":
		// The key's record knows its workflow even if the ID scheme changed since.
		wf, found, err := s.keys.Lookup(ctx, tenant, f.IdempotencyKey)
		if err != nil {
			return nil, "", &UnavailableError{What: "idempotency store", Err: err}
		}
		if !found {
			wf = order.WorkflowID(tenant, order.FromHTTP, f.IdempotencyKey)
		}
		f.WorkflowID = wf
	}
	views, next, err := s.orders.List(ctx, tenant, f.Filter)
	if err != nil && !errors.Is(err, ErrBadCursor) {
		err = &UnavailableError{What: "order list", Err: err}
	}
	return wire.List(views), next, err
}

func (s *Requests) get(ctx context.Context, tenant, orderID string) (orderstore.Row, error) {
	view, err := s.orders.Get(ctx, tenant, orderID)
	switch {
	case errors.Is(err, orderstore.ErrNotFound):
		return view, ErrNotFound
	case err != nil:
		return view, &UnavailableError{What: "order read", Err: err}
	}
	return view, nil
}
