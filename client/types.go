package client

import "time"

// Status is an order's status (the spec's Status).
type Status string

// The statuses an order takes.
const (
	Pending               Status = "PENDING"
	PaymentPending        Status = "PAYMENT_PENDING"
	PaymentUnknown        Status = "PAYMENT_UNKNOWN"
	PaymentActionRequired Status = "PAYMENT_ACTION_REQUIRED"
	Paid                  Status = "PAID"
	PaymentDeclined       Status = "PAYMENT_DECLINED"
	Cancelled             Status = "CANCELLED"
	Failed                Status = "FAILED"
	PartiallyRefunded     Status = "PARTIALLY_REFUNDED"
	Refunded              Status = "REFUNDED"
	Disputed              Status = "DISPUTED"
)

// Item is one line of an order; amounts are integer minor units.
type Item struct {
	SKU        string `json:"sku"`
	Quantity   int64  `json:"quantity"`
	UnitAmount int64  `json:"unit_amount"`
}

// OrderRequest is what PlaceOrder sends.
type OrderRequest struct {
	CustomerID string `json:"customer_id"`
	Currency   string `json:"currency"`
	Items      []Item `json:"items"`
	// PaymentMethod is a provider token (pm_…), never card data.
	PaymentMethod string `json:"payment_method"`
}

// NextAction is where to send the customer to authenticate a payment.
type NextAction struct {
	Type         string `json:"type"`
	RedirectURL  string `json:"redirect_url,omitempty"`
	ReturnURL    string `json:"return_url,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
}

// Order is an order as the API shows it.
type Order struct {
	ID         string `json:"id"`
	Status     Status `json:"status"`
	CustomerID string `json:"customer_id"`
	Currency   string `json:"currency"`
	Amount     int64  `json:"amount"`
	Items      []Item `json:"items"`
	PaymentRef string `json:"payment_ref,omitempty"`
	Failure    string `json:"failure,omitempty"`
	// AmountRefunded counts refund requests and refunds made by others at the
	// provider.
	AmountRefunded int64 `json:"amount_refunded,omitempty"`
	// Dispute is the status of a dispute of the payment of an order that had
	// ended (CANCELLED, FAILED, REFUNDED), which keeps its status; "" for none.
	Dispute    string      `json:"dispute,omitempty"`
	NextAction *NextAction `json:"next_action,omitempty"`
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
}

// Placement is PlaceOrder's answer: the order, and what the API said of the key.
type Placement struct {
	Order
	// Key is the Idempotency-Key every attempt carried.
	Key string
	// Replayed: the answer is the one stored for an earlier request with Key.
	Replayed bool
	// Finished: the order settled within the requested wait (201).
	Finished bool
	// KeyExpires is when the API forgets Key (Idempotency-Key-Expires); after it
	// a retry gets the order as it stands.
	KeyExpires time.Time
	// Attempts is how many requests the call took.
	Attempts int
}

// ListParams filter ListOrders; zero values are not sent.
type ListParams struct {
	CustomerID     string
	Status         Status
	Limit          int
	Cursor         string
	IdempotencyKey string
	EventID        string
}

// Page is one page of ListOrders, newest first.
type Page struct {
	Data       []Order `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// RefundStatus is a refund's status (the spec's RefundStatus).
type RefundStatus string

// The statuses a refund takes.
const (
	// RefundPending: accepted, being reserved or sent to the provider.
	RefundPending RefundStatus = "PENDING"
	// RefundSucceeded: the provider refunded Amount.
	RefundSucceeded RefundStatus = "SUCCEEDED"
	// RefundFailed: nothing was refunded, for good; Failure says why.
	RefundFailed RefundStatus = "FAILED"
)

// RefundReason is why a refund is made, as the provider records it.
type RefundReason string

// The reasons a refund may give; none is fine too.
const (
	ReasonDuplicate           RefundReason = "duplicate"
	ReasonFraudulent          RefundReason = "fraudulent"
	ReasonRequestedByCustomer RefundReason = "requested_by_customer"
)

// RefundRequest is what RefundOrder sends; its zero value refunds what is left of
// the order's charge.
type RefundRequest struct {
	// Amount in the order's minor units; 0 asks for what is left when the refund
	// is reserved. More than is left ends the refund FAILED.
	Amount int64        `json:"amount,omitempty"`
	Reason RefundReason `json:"reason,omitempty"`
}

// Refund is a refund as the API shows it.
type Refund struct {
	ID      string       `json:"id"`
	OrderID string       `json:"order_id"`
	Status  RefundStatus `json:"status"`
	// Amount is what is reserved, then refunded: 0 until the refund is reserved.
	Amount int64 `json:"amount"`
	// AmountRequested is what was asked for: 0 for what was left.
	AmountRequested int64 `json:"amount_requested"`
	// Currency is the order's, empty until the refund is reserved.
	Currency string       `json:"currency,omitempty"`
	Reason   RefundReason `json:"reason,omitempty"`
	// Failure says why a FAILED refund failed: it starts with
	// "amount_exceeds_refundable" when it asked for more than was left.
	Failure   string    `json:"failure,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RefundListParams page ListRefunds; zero values are not sent.
type RefundListParams struct {
	Limit  int
	Cursor string
}

// RefundPage is one page of ListRefunds, newest first.
type RefundPage struct {
	Data       []Refund `json:"data"`
	HasMore    bool     `json:"has_more"`
	NextCursor string   `json:"next_cursor,omitempty"`
}
