// Package wire is what HTTP clients read: the JSON of every order and refund
// response, and of the responses stored for an Idempotency-Key's replays. It
// holds the shapes only (the OpenAPI spec's), so the HTTP API reaches no kind's
// package: each kind fills them from its own rows (ingress/orders,
// ingress/refunds), and the stores' rows stay free of them.
package wire

import (
	"time"

	"github.com/orderflow/orderflow/payments/provider"
)

// Order is an order as clients see it.
type Order struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	CustomerID string `json:"customer_id"`
	Currency   string `json:"currency"`
	Amount     int64  `json:"amount"`
	Items      []Item `json:"items"`
	PaymentRef string `json:"payment_ref,omitempty"`
	Failure    string `json:"failure,omitempty"`
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

// Item is a line of an order.
type Item struct {
	SKU        string `json:"sku"`
	Quantity   int64  `json:"quantity"`
	UnitAmount int64  `json:"unit_amount"`
}

// Refund is a refund request as clients see it.
type Refund struct {
	ID      string `json:"id"`
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
	// Amount is what is reserved or refunded: 0 until the refund is reserved.
	Amount int64 `json:"amount"`
	// AmountRequested is what the client asked for: 0 for what is left.
	AmountRequested int64     `json:"amount_requested"`
	Currency        string    `json:"currency,omitempty"`
	Reason          string    `json:"reason,omitempty"`
	Failure         string    `json:"failure,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}
