package orders

import (
	"context"
	"fmt"

	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/platform/personal"
)

// Customers seals an order's personal values under its customer's data key and
// shows them to readers (*custkeys.Store).
type Customers interface {
	For(ctx context.Context, tenant, customer string) (personal.Key, error)
	Hasher() personal.Hasher
	Shown(ctx context.Context, tenant, value string) (string, error)
}

// order is the order a request makes, its personal values sealed. Sealing is
// deterministic for a workflow (personal.Key.SealAt): every retry of a request
// starts, records and fingerprints the same order.
func (k *Kind) order(ctx context.Context, tenant, workflowID string, req Request) (order.Order, error) {
	o := req.Order(tenant, workflowID)
	if k.customers == nil {
		return o, nil
	}
	key, err := k.customers.For(ctx, tenant, o.CustomerID)
	if err != nil {
		return order.Order{}, &intake.UnavailableError{What: "customer keys", Err: err}
	}
	o.Print = o.Fingerprint()
	o.CustomerHash = k.customers.Hasher().Hash(tenant, o.CustomerID)
	o.CustomerID = key.SealAt(o.CustomerID, workflowID+"/customer_id")
	o.PaymentMethod = key.SealAt(o.PaymentMethod, workflowID+"/payment_method")
	return o, nil
}

// shown is the row as a client reads it: its customer's ID opened, or
// personal.Erased once the customer was erased.
func (k *Kind) shown(ctx context.Context, tenant string, row orderstore.Row) (orderstore.Row, error) {
	if k.customers == nil || row.ID == "" {
		return row, nil
	}
	v, err := k.customers.Shown(ctx, tenant, row.CustomerID)
	if err != nil {
		return row, &intake.UnavailableError{What: "customer keys", Err: fmt.Errorf("order %s: %w", row.ID, err)}
	}
	row.CustomerID = v
	return row, nil
}

// shownAll is shown for each row.
func (k *Kind) shownAll(ctx context.Context, tenant string, rows []orderstore.Row) ([]orderstore.Row, error) {
	for i := range rows {
		var err error
		if rows[i], err = k.shown(ctx, tenant, rows[i]); err != nil {
			return nil, err
		}
	}
	return rows, nil
}
