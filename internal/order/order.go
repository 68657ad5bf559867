// Package order holds the order's domain types and the pure, deterministic
// derivations that workflows, activities and ingress share.
package order

import (
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"math"
)

// Status is an order's state in the read model and in the workflow.
type Status string

const (
	StatusPending         Status = "PENDING"
	StatusPaymentPending  Status = "PAYMENT_PENDING" // a charge was sent; its outcome is not known yet
	StatusPaid            Status = "PAID"
	StatusPaymentDeclined Status = "PAYMENT_DECLINED"
	StatusCancelled       Status = "CANCELLED"
	StatusFailed          Status = "FAILED" // failed for good after the charge; refunded
)

// Terminal reports whether no further transition can leave the status.
func (s Status) Terminal() bool {
	switch s {
	case StatusPaymentDeclined, StatusCancelled, StatusFailed:
		return true
	}
	return false
}

// Item is one order line. Amounts are integer minor units.
type Item struct {
	SKU        string `json:"sku"`
	Quantity   int64  `json:"quantity"`
	UnitAmount int64  `json:"unit_amount"`
}

// Order is what a client asked for, plus the identity derived from its workflow.
// PaymentMethod is a provider token (pm_...), never card data.
type Order struct {
	ID            string `json:"id"`
	Tenant        string `json:"tenant"`
	WorkflowID    string `json:"workflow_id"`
	CustomerID    string `json:"customer_id"`
	Currency      string `json:"currency"`
	Items         []Item `json:"items"`
	Amount        int64  `json:"amount"`
	PaymentMethod string `json:"payment_method"`
}

// ErrOverflow reports an order total that does not fit in int64 minor units.
var ErrOverflow = errors.New("order total overflows")

// Total sums the items, refusing non-positive values and overflow.
func Total(items []Item) (int64, error) {
	var sum int64
	for i, it := range items {
		if it.Quantity <= 0 || it.UnitAmount <= 0 {
			return 0, fmt.Errorf("items[%d]: quantity and unit_amount must be positive", i)
		}
		if it.UnitAmount > math.MaxInt64/it.Quantity {
			return 0, fmt.Errorf("items[%d]: %w", i, ErrOverflow)
		}
		line := it.Quantity * it.UnitAmount
		if sum > math.MaxInt64-line {
			return 0, fmt.Errorf("items[%d]: %w", i, ErrOverflow)
		}
		sum += line
	}
	return sum, nil
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		// Length-prefixed, so ("ab","c") and ("a","bc") differ.
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return b32.EncodeToString(h.Sum(nil))
}

// IDFor derives the public order ID from its workflow ID: stable across retries and
// free of the tenant's or client's data.
func IDFor(workflowID string) string {
	return "ord_" + lower(digest("order", workflowID)[:26])
}

// EventID derives the ID of an outbound event, the same on every attempt to publish it.
func EventID(workflowID, eventType string) string {
	return "evt_" + lower(digest("event", workflowID, eventType)[:26])
}

// PaymentKey is the idempotency key sent to the payment provider for one operation
// ("charge", "refund") of one order: derived from the business identity, never from
// the attempt or run.
func PaymentKey(workflowID, op string) string {
	return workflowID + "/" + op
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
