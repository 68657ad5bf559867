// Package wire is what HTTP clients read: the JSON of every order and refund
// response, and of the responses stored for an Idempotency-Key's replays. The
// order store's row stays free of it.
package wire

import (
	"time"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/internal/refund"
	"github.com/orderflow/orderflow/internal/refundstore"
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
	// Dispute is the status of a dispute of the payment of an order that had
	// ended (CANCELLED, FAILED, REFUNDED), which keeps its status.
	Dispute string `json:"dispute,omitempty"`
	// NextAction is where to send the customer, while the order waits on them
	// (read from the provider on GET of the order; never stored).
	NextAction *provider.NextAction `json:"next_action,omitempty"`
	CreatedAt  time.Time            `json:"created_at"`
	UpdatedAt  time.Time            `json:"updated_at"`
}

// From is the order of a row of the order store.
func From(r orderstore.Row) Order {
	return Order{ID: r.ID, Status: r.Status, CustomerID: r.CustomerID, Currency: r.Currency, Amount: r.Amount,
		Items: r.Items, PaymentRef: r.PaymentRef, Failure: r.Failure, AmountRefunded: r.AmountRefunded, Dispute: r.Dispute,
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

// Refund is a refund request as clients see it.
type Refund struct {
	ID      string        `json:"id"`
	OrderID string        `json:"order_id"`
	Status  refund.Status `json:"status"`
	// Amount is what is reserved or refunded: 0 until the refund is reserved.
	Amount int64 `json:"amount"`
	// AmountRequested is what the client asked for: 0 for what is left.
	AmountRequested int64         `json:"amount_requested"`
	Currency        string        `json:"currency,omitempty"`
	Reason          refund.Reason `json:"reason,omitempty"`
	Failure         string        `json:"failure,omitempty"`
	CreatedAt       time.Time     `json:"created_at"`
	UpdatedAt       time.Time     `json:"updated_at"`
}

// RefundFrom is the refund of a row of the refunds table.
func RefundFrom(r refundstore.Row) Refund {
	return Refund{ID: r.ID, OrderID: r.OrderID, Status: r.Status, Amount: r.Amount, AmountRequested: r.AmountRequested,
		Currency: r.Currency, Reason: r.Reason, Failure: r.Failure, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}
