package intake

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/workflows"
)

// Orders is the first kind: an order and its payment, run by workflows.Order and
// read from the orders table.
type Orders struct {
	orders    OrderStore
	workflows Workflows
}

var _ ingress.Kind = (*Orders)(nil)

// NewOrders is the order kind on its read model and its workflows.
func NewOrders(orders OrderStore, workflows Workflows) *Orders {
	return &Orders{orders: orders, workflows: workflows}
}

// Name is order.Kind.
func (*Orders) Name() string { return order.Kind }

// PublicID is the order's ID (ord_...).
func (*Orders) PublicID(workflowID string) string { return order.IDFor(workflowID) }

// Envelope: a plain event's "order", or a CloudEvent OrderRequested.
func (*Orders) Envelope() ingress.Envelope {
	return ingress.Envelope{Field: "order", CloudEventType: OrderRequestedType}
}

// OrderRequestedType is the CloudEvent type of an order's request.
const OrderRequestedType = "dev.orderflow.OrderRequested.v1"

// Decode reads the order an event carries.
func (*Orders) Decode(payload json.RawMessage) (ingress.Request, error) {
	return DecodeRequest(payload)
}

// Admit admits every valid order.
func (*Orders) Admit(context.Context, string, ingress.Request) error { return nil }

// Start starts (or finds) the order's workflow.
func (k *Orders) Start(ctx context.Context, tenant, workflowID string, req ingress.Request) (ingress.Run, error) {
	return k.workflows.Start(ctx, req.(Request).Order(tenant, workflowID))
}

// StartNew starts the order's workflow unless its ID exists.
func (k *Orders) StartNew(ctx context.Context, tenant, workflowID string, req ingress.Request) (bool, error) {
	return k.workflows.StartNew(ctx, req.(Request).Order(tenant, workflowID))
}

// StartSettled starts (or finds) the order's workflow and answers once it is
// settled for a waiting client; the workflow has recorded the order, its first
// step.
func (k *Orders) StartSettled(ctx context.Context, tenant, workflowID string, req ingress.Request, wait time.Duration) (ingress.View, error) {
	res, err := k.workflows.StartSettled(ctx, req.(Request).Order(tenant, workflowID), wait)
	if err != nil {
		return ingress.View{}, err
	}
	v, err := k.View(ctx, tenant, workflowID)
	v.Final = final(res.Status)
	return v, err
}

// Placed is the fingerprint of the order an existing workflow runs.
func (k *Orders) Placed(ctx context.Context, workflowID string) ([]byte, error) {
	o, err := k.workflows.Placed(ctx, workflowID)
	if err != nil {
		return nil, err
	}
	return orderFingerprint(o), nil
}

// Record writes the order to the read model.
func (k *Orders) Record(ctx context.Context, tenant, workflowID string, req ingress.Request) (ingress.View, error) {
	row, err := k.orders.Record(ctx, req.(Request).Order(tenant, workflowID))
	if err != nil {
		return ingress.View{}, err
	}
	return orderView(row), nil
}

// View is the order as the read model has it.
func (k *Orders) View(ctx context.Context, tenant, workflowID string) (ingress.View, error) {
	row, err := k.orders.Get(ctx, tenant, order.IDFor(workflowID))
	if errors.Is(err, orderstore.ErrNotFound) {
		// An order recorded under another ID scheme is still found by its workflow.
		row, err = k.orders.GetByWorkflow(ctx, tenant, workflowID)
	}
	switch {
	case errors.Is(err, orderstore.ErrNotFound):
		return ingress.View{}, ingress.ErrNoView
	case err != nil:
		return ingress.View{}, err
	}
	return orderView(row), nil
}

func orderView(row orderstore.Row) ingress.View {
	body, _ := json.Marshal(wire.From(row))
	return ingress.View{ID: row.ID, Body: body, Final: final(row.Status), Fingerprint: row.Fingerprint}
}

// final reports the statuses that answer a waiting client 201: the payment's ends
// (an order waiting on its customer answers 202 with where to send them).
func final(s order.Status) bool {
	return workflows.Answered(s) && s != order.StatusActionRequired
}
