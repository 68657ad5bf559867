package refunds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/workflows"
)

// Orders reads the order a refund names (*orderstore.Store).
type Orders interface {
	Get(ctx context.Context, tenant, id string) (orderstore.Row, error)
}

// Store is the refunds table (*refundstore.Store).
type Store interface {
	Record(ctx context.Context, r refund.Refund) (refundstore.Row, error)
	Get(ctx context.Context, tenant, id string) (refundstore.Row, error)
	GetByWorkflow(ctx context.Context, tenant, workflowID string) (refundstore.Row, error)
	ListByOrder(ctx context.Context, tenant, orderID string, limit int, cursor string) ([]refundstore.Row, string, error)
}

var (
	_ Orders = (*orderstore.Store)(nil)
	_ Store  = (*refundstore.Store)(nil)
)

// Kind is the refund request kind.
type Kind struct {
	orders  Orders
	store   Store
	starter intake.Starter
}

var _ ingress.Kind = (*Kind)(nil)

// New is the refund kind: its orders read for admission, its table, and the
// ingress's starter of workflows.
func New(orders Orders, store Store, starter intake.Starter) *Kind {
	return &Kind{orders: orders, store: store, starter: starter}
}

// Name is refund.Kind.
func (*Kind) Name() string { return refund.Kind }

// PublicID is the refund's ID (rfd_...).
func (*Kind) PublicID(workflowID string) string { return refund.IDFor(workflowID) }

// Envelope: a plain event's "refund", or a CloudEvent RefundRequested.
func (*Kind) Envelope() ingress.Envelope {
	return ingress.Envelope{Field: "refund", CloudEventType: "dev.orderflow.RefundRequested.v1"}
}

// Decode reads the refund an event carries.
func (*Kind) Decode(payload json.RawMessage) (ingress.Request, error) { return DecodeEvent(payload) }

// Admit takes a refund of one of the tenant's orders that is paid, and nothing
// else: nothing is sent to the provider for an order that charged nothing. What
// is left to refund is judged by the workflow, under the order's lock, since
// concurrent refunds are ordered only there.
func (k *Kind) Admit(ctx context.Context, tenant string, req ingress.Request) error {
	r := req.(Request)
	o, err := k.orders.Get(ctx, tenant, r.OrderID)
	switch {
	case errors.Is(err, orderstore.ErrNotFound):
		return &ingress.Refusal{Problem: "not-found", Detail: "no such order"}
	case err != nil:
		return fmt.Errorf("read the order to refund: %w", err)
	case !Refundable(o.Status):
		return &ingress.Refusal{Problem: "order-not-refundable",
			Detail: "the order is " + string(o.Status) + ": only a PAID or PARTIALLY_REFUNDED order can be refunded"}
	}
	return nil
}

// Refundable reports the statuses of an order a refund request may be made of.
func Refundable(s order.Status) bool {
	return s == order.StatusPaid || s == order.StatusPartiallyRefunded
}

func (k *Kind) input(tenant, workflowID string, req ingress.Request) workflows.RefundInput {
	return workflows.RefundInput{Refund: req.(Request).Refund(tenant, workflowID)}
}

// Start starts (or finds) the refund's workflow.
func (k *Kind) Start(ctx context.Context, tenant, workflowID string, req ingress.Request) (ingress.Run, error) {
	return k.starter.Start(ctx, tenant, workflowID, workflows.Refund, k.input(tenant, workflowID, req))
}

// StartNew starts the refund's workflow unless its ID exists.
func (k *Kind) StartNew(ctx context.Context, tenant, workflowID string, req ingress.Request) (bool, error) {
	return k.starter.StartNew(ctx, tenant, workflowID, workflows.Refund, k.input(tenant, workflowID, req))
}

// errNoUpdate: a refund settles in seconds, so a waiting client waits on the run.
var errNoUpdate = errors.New("refunds answer a wait by their run's end")

// StartSettled is not offered: the ingress starts the refund and waits for its run.
func (k *Kind) StartSettled(context.Context, string, string, ingress.Request, time.Duration) (ingress.View, error) {
	return ingress.View{}, errNoUpdate
}

// Placed is the fingerprint of the refund an existing workflow runs.
func (k *Kind) Placed(ctx context.Context, workflowID string) ([]byte, error) {
	var in workflows.RefundInput
	if err := k.starter.Input(ctx, workflowID, &in); err != nil {
		return nil, err
	}
	return in.Refund.Fingerprint(), nil
}

// Record writes the refund, PENDING, before its client hears of it.
func (k *Kind) Record(ctx context.Context, tenant, workflowID string, req ingress.Request) (ingress.View, error) {
	row, err := k.store.Record(ctx, req.(Request).Refund(tenant, workflowID))
	if err != nil {
		return ingress.View{}, fmt.Errorf("record refund: %w", err)
	}
	return view(row), nil
}

// View is the refund as it stands.
func (k *Kind) View(ctx context.Context, tenant, workflowID string) (ingress.View, error) {
	row, err := k.store.GetByWorkflow(ctx, tenant, workflowID)
	switch {
	case errors.Is(err, refundstore.ErrNotFound):
		return ingress.View{}, ingress.ErrNoView
	case err != nil:
		return ingress.View{}, fmt.Errorf("read refund: %w", err)
	}
	return view(row), nil
}

func view(row refundstore.Row) ingress.View {
	body, _ := json.Marshal(Wire(row))
	return ingress.View{ID: row.ID, Body: body, Final: row.Status != refund.StatusPending, Fingerprint: row.Fingerprint}
}
