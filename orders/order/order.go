// Package order is the order domain: its types, its state machine (status.go) and
// its identity (identity.go), pure and deterministic, shared by workflows,
// activities and both ingresses.
package order

import (
	"errors"
	"fmt"
	"math"
)

// Item is one order line. Amounts are integer minor units.
type Item struct {
	SKU        string `json:"sku"`
	Quantity   int64  `json:"quantity"`
	UnitAmount int64  `json:"unit_amount"`
}

// Order is what a client asked for, plus the identity derived from its workflow.
// PaymentMethod is a provider token (pm_...), never card data.
//
// CustomerID and PaymentMethod are personal: the ingress seals them under the
// customer's data key (platform/personal) before the order goes anywhere, so an
// erasure makes them unreadable in every copy. Orders placed before sealing
// carry them plain and no CustomerHash.
type Order struct {
	ID            string `json:"id"`
	Tenant        string `json:"tenant"`
	WorkflowID    string `json:"workflow_id"`
	CustomerID    string `json:"customer_id"`
	Currency      string `json:"currency"`
	Items         []Item `json:"items"`
	Amount        int64  `json:"amount"`
	PaymentMethod string `json:"payment_method"`
	// CustomerHash is the customer's keyed hash: what finds the customer's orders.
	CustomerHash []byte `json:"customer_hash,omitempty"`
	// Print is the fingerprint of the plain request, taken before sealing.
	Print []byte `json:"print,omitempty"`
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
