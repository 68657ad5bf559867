package intake

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
)

// Requests is the HTTP ingress's intake: requests with an Idempotency-Key placed
// as at most one order each, and the tenant's orders read and cancelled.
type Requests struct {
	kind      *Orders
	keys      KeyStore
	orders    OrderStore
	workflows Workflows
	logger    *slog.Logger
	intents   IntentReader // nil: no next actions
}

func newRequests(keys KeyStore, orders OrderStore, workflows Workflows, logger *slog.Logger) *Requests {
	return &Requests{kind: NewOrders(orders, workflows), keys: keys, orders: orders, workflows: workflows, logger: logger}
}

// Place turns a request with an Idempotency-Key into at most one order. wait > 0
// waits up to that long for the order to settle (HTTP's Prefer: wait).
func (s *Requests) Place(ctx context.Context, tenant, key string, req Request, wait time.Duration) Result {
	return s.Submit(ctx, s.kind, tenant, key, req, wait)
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

// NotCancellableError is an order past cancelling: settled otherwise or fulfilled
// (a cancel already going through is joined, never refused).
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
