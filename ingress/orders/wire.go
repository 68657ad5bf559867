package orders

import (
	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/orders/orderstore"
)

// Wire is the order of a row of the order store, as clients read it.
func Wire(r orderstore.Row) wire.Order {
	var items []wire.Item // nil stays null, as the row has it
	if r.Items != nil {
		items = make([]wire.Item, len(r.Items))
	}
	for i, it := range r.Items {
		items[i] = wire.Item(it)
	}
	return wire.Order{ID: r.ID, Status: string(r.Status), CustomerID: r.CustomerID, Currency: r.Currency, Amount: r.Amount,
		Items: items, PaymentRef: r.PaymentRef, Failure: r.Failure, AmountRefunded: r.AmountRefunded, Dispute: r.Dispute,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// WireList is the orders of rows, in their order.
func WireList(rows []orderstore.Row) []wire.Order {
	out := make([]wire.Order, len(rows))
	for i, r := range rows {
		out[i] = Wire(r)
	}
	return out
}
