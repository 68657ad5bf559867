// Package wire is an order as HTTP clients read it: the JSON of every order
// response, and of the responses stored for an Idempotency-Key's replays. The
// order store's row stays free of it.
package wire

import (
	"time"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/provider"
)

// Order is an order as clients see it.
type Order struct {
	ID         string       `json:"id"`
	Status     order.Status `json:"status"`
	CustomerID string       `json:"customer_id"`
	Currency   string       `json:"currency"`
	Amount     int64        `json:"amount"`
	Items      []order.Item `json:"items"`
	PaymentRef string       `json:"payment_ref,omitempty"`
	Failure    string       `json:"failure,omitempty"`
	// AmountRefunded is what others refunded at the provider (PARTIALLY_REFUNDED,
	// REFUNDED).
	AmountRefunded int64 `json:"amount_refunded,omitempty"`
	// NextAction is where to send the customer, while the order waits on them
	// (read from the provider on GET of the order; never stored).
	NextAction *provider.NextAction `json:"next_action,omitempty"`
	CreatedAt  time.Time            `json:"created_at"`
	UpdatedAt  time.Time            `json:"updated_at"`
}

// From is the order of a row of the order store.
func From(r orderstore.Row) Order {
	return Order{ID: r.ID, Status: r.Status, CustomerID: r.CustomerID, Currency: r.Currency, Amount: r.Amount,
		Items: r.Items, PaymentRef: r.PaymentRef, Failure: r.Failure, AmountRefunded: r.AmountRefunded,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// List is the orders of rows, in their order.
func List(rows []orderstore.Row) []Order {
	out := make([]Order, len(rows))
	for i, r := range rows {
		out[i] = From(r)
	}
	return out
}
