package refunds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/refundstore"
)

// Keyed starts any kind's workflows with an Idempotency-Key (*intake.Requests).
type Keyed interface {
	Submit(ctx context.Context, k ingress.Kind, tenant, key string, req ingress.Request, wait time.Duration) intake.Result
}

// Service is the HTTP ingress's refunds: requested with an Idempotency-Key, read
// by ID and by order.
type Service struct {
	kind  *Kind
	keyed Keyed
}

// NewService is the refunds of kind k, started through keyed.
func NewService(k *Kind, keyed Keyed) *Service { return &Service{kind: k, keyed: keyed} }

// Decode reads and validates the body of POST /v1/orders/{id}/refunds: orderID
// is the path's.
func (s *Service) Decode(body []byte, orderID string) (ingress.Request, error) {
	return DecodeHTTP(body, orderID)
}

// Request starts at most one refund per key (HTTP's Prefer: wait waits up to
// wait); req is a Request.
func (s *Service) Request(ctx context.Context, tenant, key string, req ingress.Request, wait time.Duration) intake.Result {
	return s.keyed.Submit(ctx, s.kind, tenant, key, req, wait)
}

// Get returns one of the tenant's refunds.
func (s *Service) Get(ctx context.Context, tenant, id string) (wire.Refund, error) {
	row, err := s.kind.store.Get(ctx, tenant, id)
	switch {
	case errors.Is(err, refundstore.ErrNotFound):
		return wire.Refund{}, intake.ErrNotFound
	case err != nil:
		return wire.Refund{}, &intake.UnavailableError{What: "refund read", Err: err}
	}
	return Wire(row), nil
}

// List returns a page of the refunds of one of the tenant's orders, newest first.
func (s *Service) List(ctx context.Context, tenant, orderID string, limit int, cursor string) ([]wire.Refund, string, error) {
	if _, err := s.kind.orders.Get(ctx, tenant, orderID); err != nil {
		if errors.Is(err, orderstore.ErrNotFound) {
			return nil, "", intake.ErrNotFound
		}
		return nil, "", &intake.UnavailableError{What: "order read", Err: err}
	}
	rows, next, err := s.kind.store.ListByOrder(ctx, tenant, orderID, limit, cursor)
	switch {
	case errors.Is(err, refundstore.ErrBadCursor):
		return nil, "", intake.ErrBadCursor
	case err != nil:
		return nil, "", &intake.UnavailableError{What: "refund list", Err: fmt.Errorf("list refunds: %w", err)}
	}
	out := make([]wire.Refund, len(rows))
	for i, r := range rows {
		out[i] = Wire(r)
	}
	return out, next, nil
}

// Wire is the refund of a row of the refunds table, as clients read it.
func Wire(r refundstore.Row) wire.Refund {
	return wire.Refund{ID: r.ID, OrderID: r.OrderID, Status: string(r.Status), Amount: r.Amount, AmountRequested: r.AmountRequested,
		Currency: r.Currency, Reason: string(r.Reason), Failure: r.Failure, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}
