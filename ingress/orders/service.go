package orders

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
)

// Keyed starts any kind's workflows with an Idempotency-Key, and finds the
// workflow a key was claimed for (*intake.Requests).
type Keyed interface {
	Submit(ctx context.Context, k ingress.Kind, tenant, key string, req ingress.Request, wait time.Duration) intake.Result
	Lookup(ctx context.Context, k ingress.Kind, tenant, key string) (workflowID string, found bool, err error)
}

// IntentReader reads PaymentIntents from the provider.
type IntentReader interface {
	RetrieveIntent(ctx context.Context, intentID string) (provider.Intent, error)
}

var _ Keyed = (*intake.Requests)(nil)

// Service is what the HTTP API does with orders: each request with an
// Idempotency-Key placed as at most one order, and the tenant's orders read and
// cancelled.
type Service struct {
	kind      *Kind
	keyed     Keyed
	orders    Store
	workflows Workflows
	logger    *slog.Logger
	intents   IntentReader // nil: no next actions
}

// NewService serves the order kind's requests through keyed, reading orders
// from their store and cancelling them through their workflows; intents reads
// an order's intent for what its customer must do (nil: none shown).
func NewService(keyed Keyed, orders Store, workflows Workflows, intents IntentReader, logger *slog.Logger) *Service {
	return &Service{kind: New(orders, workflows), keyed: keyed, orders: orders, workflows: workflows, intents: intents, logger: logger}
}

// Kind is the order kind the service places.
func (s *Service) Kind() *Kind { return s.kind }

// Decode reads and validates an order's POST body.
func (s *Service) Decode(body []byte) (ingress.Request, error) { return DecodeRequest(body) }

// Place turns a request with an Idempotency-Key into at most one order. wait > 0
// waits up to that long for the order to settle (HTTP's Prefer: wait).
func (s *Service) Place(ctx context.Context, tenant, key string, req ingress.Request, wait time.Duration) intake.Result {
	return s.keyed.Submit(ctx, s.kind, tenant, key, req, wait)
}

// Submit starts a keyed request of any kind, as Keyed does: another kind (refund
// requests) is served on the same keys.
func (s *Service) Submit(ctx context.Context, k ingress.Kind, tenant, key string, req ingress.Request, wait time.Duration) intake.Result {
	return s.keyed.Submit(ctx, k, tenant, key, req, wait)
}

// Errors of Cancel.
var (
	// errNotCancellable: the workflow refused the cancel or has closed.
	errNotCancellable = errors.New("not cancellable")
	// errCancelPending: the workflow accepted the cancel, and carries it out in
	// its next run.
	errCancelPending = errors.New("cancel pending")
)

// notCancellable is an order past cancelling: settled otherwise or fulfilled (a
// cancel already going through is joined, never refused).
func notCancellable(s order.Status) *ingress.Refusal {
	return &ingress.Refusal{Problem: "not-cancellable", Detail: "the order is " + string(s)}
}

// Cancel cancels one of the tenant's orders (refunding it if it was paid) and returns
// it as it stands after. Cancelling a cancelled order answers the same.
func (s *Service) Cancel(ctx context.Context, tenant, orderID string) (wire.Order, error) {
	row, err := s.cancel(ctx, tenant, orderID)
	row, serr := s.kind.shown(ctx, tenant, row)
	return Wire(row), errors.Join(err, serr)
}

func (s *Service) cancel(ctx context.Context, tenant, orderID string) (orderstore.Row, error) {
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
		return view, notCancellable(view.Status)
	case err != nil:
		return view, &intake.UnavailableError{What: "cancel update", Err: err}
	case status != order.StatusCancelled:
		// Accepted while the charge was in flight, but the order settled otherwise
		// (declined, failed): nothing to cancel.
		return view, notCancellable(status)
	}
	return s.get(ctx, tenant, orderID)
}

// Get returns one of the tenant's orders.
//
// An order waiting on its customer carries the intent's next action, read from
// the provider now (never stored: it holds the intent's client secret). Only
// here: neither lists nor the responses stored for an Idempotency-Key carry it.
// If the provider does not answer, the order is shown without it.
func (s *Service) Get(ctx context.Context, tenant, orderID string) (wire.Order, error) {
	row, err := s.get(ctx, tenant, orderID)
	if err == nil {
		row, err = s.kind.shown(ctx, tenant, row)
	}
	v := Wire(row)
	if err != nil || row.Status != order.StatusActionRequired || s.intents == nil || v.PaymentRef == "" {
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

// List returns a page of the tenant's orders, newest first, and the next cursor.
// An unknown status, or both keys, is a *ingress.FieldError, before any query.
func (s *Service) List(ctx context.Context, tenant string, f intake.Filter) ([]wire.Order, string, error) {
	of := orderstore.Filter{CustomerID: f.CustomerID, Status: order.Status(f.Status), Limit: f.Limit, Cursor: f.Cursor}
	if f.CustomerID != "" && s.kind.customers != nil {
		of.CustomerHash = s.kind.customers.Hasher().Hash(tenant, f.CustomerID)
	}
	switch {
	case of.Status != "" && !of.Status.Valid():
		return nil, "", &ingress.FieldError{Field: "status", Message: "unknown status"}
	case f.IdempotencyKey != "" && f.EventID != "":
		return nil, "", &ingress.FieldError{Field: "event_id", Message: "give idempotency_key or event_id, not both"}
	case f.EventID != "":
		of.WorkflowID = order.WorkflowID(tenant, order.FromEvent, f.EventID)
	case f.IdempotencyKey != "":
		// The key's record knows its workflow even if the ID scheme changed since.
		wf, found, err := s.keyed.Lookup(ctx, s.kind, tenant, f.IdempotencyKey)
		if err != nil {
			return nil, "", &intake.UnavailableError{What: "idempotency store", Err: err}
		}
		if !found {
			wf = order.WorkflowID(tenant, order.FromHTTP, f.IdempotencyKey)
		}
		of.WorkflowID = wf
	}
	rows, next, err := s.orders.List(ctx, tenant, of)
	switch {
	case errors.Is(err, orderstore.ErrBadCursor):
		err = intake.ErrBadCursor
	case err != nil:
		err = &intake.UnavailableError{What: "order list", Err: err}
	default:
		rows, err = s.kind.shownAll(ctx, tenant, rows)
	}
	return WireList(rows), next, err
}

func (s *Service) get(ctx context.Context, tenant, orderID string) (orderstore.Row, error) {
	view, err := s.orders.Get(ctx, tenant, orderID)
	switch {
	case errors.Is(err, orderstore.ErrNotFound):
		return view, intake.ErrNotFound
	case err != nil:
		return view, &intake.UnavailableError{What: "order read", Err: err}
	}
	return view, nil
}
