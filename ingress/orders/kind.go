package orders

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/workflows"
)

// Store is the orders read model.
type Store interface {
	Record(ctx context.Context, o order.Order) (orderstore.Row, error)
	Get(ctx context.Context, tenant, id string) (orderstore.Row, error)
	GetByWorkflow(ctx context.Context, tenant, workflowID string) (orderstore.Row, error)
	List(ctx context.Context, tenant string, f orderstore.Filter) ([]orderstore.Row, string, error)
}

// Workflows runs workflows.Order.
type Workflows interface {
	// Start starts the order's workflow, or finds it: never a second one.
	Start(ctx context.Context, o order.Order) (intake.Run, error)
	// StartNew starts the order's workflow unless its ID exists (running, or closed
	// and retained): created says which.
	StartNew(ctx context.Context, o order.Order) (created bool, err error)
	// Placed returns the order an existing workflow runs.
	Placed(ctx context.Context, workflowID string) (order.Order, error)
	// Cancel asks the order's workflow to cancel and returns the status it settled in.
	Cancel(ctx context.Context, workflowID string) (order.Status, error)
	// StartSettled starts (or finds) the order's workflow and returns the order
	// once it is settled for a waiting client, within wait; on any error the
	// caller starts it with Start.
	StartSettled(ctx context.Context, o order.Order, wait time.Duration) (workflows.OrderResult, error)
}

// Kind is the first kind: an order and its payment, run by workflows.Order and
// read from the orders table.
type Kind struct {
	orders    Store
	workflows Workflows
	customers Customers // nil: personal values stay plain (tests without keys)
}

var (
	_ ingress.Ledgered = (*Kind)(nil)
	_ Store            = (*orderstore.Store)(nil)
)

// New is the order kind on its read model and its workflows.
func New(orders Store, workflows Workflows) *Kind {
	return &Kind{orders: orders, workflows: workflows}
}

// SealWith makes k seal orders' personal values with c and open them for readers.
func (k *Kind) SealWith(c Customers) *Kind {
	k.customers = c
	return k
}

// Name is order.Kind.
func (*Kind) Name() string { return order.Kind }

// PublicID is the order's ID (ord_...).
func (*Kind) PublicID(workflowID string) string { return order.IDFor(workflowID) }

// Envelope: a plain event's "order", or a CloudEvent OrderRequested.
func (*Kind) Envelope() ingress.Envelope {
	return ingress.Envelope{Field: "order", CloudEventType: RequestedType}
}

// RequestedType is the CloudEvent type of an order's request.
const RequestedType = "dev.orderflow.OrderRequested.v1"

// Decode reads the order an event carries.
func (*Kind) Decode(payload json.RawMessage) (ingress.Request, error) {
	return DecodeRequest(payload)
}

// Admit admits every valid order.
func (*Kind) Admit(context.Context, string, ingress.Request) error { return nil }

// Start starts (or finds) the order's workflow.
func (k *Kind) Start(ctx context.Context, tenant, workflowID string, req ingress.Request) (ingress.Run, error) {
	o, err := k.order(ctx, tenant, workflowID, req.(Request))
	if err != nil {
		return nil, err
	}
	return k.workflows.Start(ctx, o)
}

// StartNew starts the order's workflow unless its ID exists.
func (k *Kind) StartNew(ctx context.Context, tenant, workflowID string, req ingress.Request) (bool, error) {
	o, err := k.order(ctx, tenant, workflowID, req.(Request))
	if err != nil {
		return false, err
	}
	return k.workflows.StartNew(ctx, o)
}

// StartSettled starts (or finds) the order's workflow and answers once it is
// settled for a waiting client; the workflow has recorded the order, its first
// step.
func (k *Kind) StartSettled(ctx context.Context, tenant, workflowID string, req ingress.Request, wait time.Duration) (ingress.View, error) {
	o, err := k.order(ctx, tenant, workflowID, req.(Request))
	if err != nil {
		return ingress.View{}, err
	}
	res, err := k.workflows.StartSettled(ctx, o, wait)
	if err != nil {
		return ingress.View{}, err
	}
	v, err := k.View(ctx, tenant, workflowID)
	v.Final = final(res.Status)
	return v, err
}

// Placed is the fingerprint of the order an existing workflow runs.
func (k *Kind) Placed(ctx context.Context, workflowID string) ([]byte, error) {
	o, err := k.workflows.Placed(ctx, workflowID)
	if err != nil {
		return nil, err
	}
	return o.Fingerprint(), nil
}

// Record writes the order to the read model.
func (k *Kind) Record(ctx context.Context, tenant, workflowID string, req ingress.Request) (ingress.View, error) {
	o, err := k.order(ctx, tenant, workflowID, req.(Request))
	if err != nil {
		return ingress.View{}, err
	}
	row, err := k.orders.Record(ctx, o)
	if err != nil {
		return ingress.View{}, err
	}
	return k.view(ctx, tenant, row)
}

// FingerprintQuery is the SQL query of the fingerprint of the order a workflow
// recorded in the orders table: the key claim and the event log ask it in their
// own statements (ingress.Ledgered).
func (*Kind) FingerprintQuery(tenant, workflowID string) string {
	return orderstore.FingerprintOf(tenant, workflowID)
}

// View is the order as the read model has it.
func (k *Kind) View(ctx context.Context, tenant, workflowID string) (ingress.View, error) {
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
	return k.view(ctx, tenant, row)
}

// view is the row as the ingress answers it and stores the answer for a key's
// replays: its customer's ID as the row keeps it, sealed. The API opens it for
// the client on the way out (httpapi.Personal), so a stored answer holds nothing
// an erasure must find, and a replay after one reads "[erased]".
func (k *Kind) view(_ context.Context, _ string, row orderstore.Row) (ingress.View, error) {
	body, _ := json.Marshal(Wire(row))
	return ingress.View{ID: row.ID, Body: body, Final: final(row.Status), Fingerprint: row.Fingerprint}, nil
}

// final reports the statuses that answer a waiting client 201: the payment's ends
// (an order waiting on its customer answers 202 with where to send them).
func final(s order.Status) bool {
	return workflows.Answered(s) && s != order.StatusActionRequired
}
