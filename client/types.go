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
	ID             string      `json:"id"`
	Status         Status      `json:"status"`
	CustomerID     string      `json:"customer_id"`
	Currency       string      `json:"currency"`
	Amount         int64       `json:"amount"`
	Items          []Item      `json:"items"`
	PaymentRef     string      `json:"payment_ref,omitempty"`
	Failure        string      `json:"failure,omitempty"`
	AmountRefunded int64       `json:"amount_refunded,omitempty"`
	NextAction     *NextAction `json:"next_action,omitempty"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
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
