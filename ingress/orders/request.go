// Package orders is the first workflow kind: an order and its payment, run by
// workflows.Order and read from the orders table. It says only what differs
// from other kinds (ingress.Kind): its request, its fingerprint, its workflow's
// start and answer, and its reads and cancel; the ingress core does the rest.
package orders

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/orders/order"
)

// Request is the order a client asks for, as in the POST body and the event's
// "order" field.
type Request struct {
	CustomerID    string       `json:"customer_id"`
	Currency      string       `json:"currency"`
	Items         []order.Item `json:"items"`
	PaymentMethod string       `json:"payment_method"`
}

func fieldErr(field, format string, args ...any) *ingress.FieldError {
	return ingress.FieldErrorf(field, format, args...)
}

// Limits of a request.
const (
	MaxItems = 100
	MaxIDLen = 128
)

// DecodeRequest parses and validates an order strictly: UTF-8 only, no unknown
// fields, no trailing data, no deep nesting, every number an int64.
func DecodeRequest(data []byte) (Request, error) {
	var r Request
	if err := ingress.DecodeStrict(data, &r); err != nil {
		return r, err
	}
	return r, r.Validate()
}

// Validate checks every field; the first problem is returned.
func (r *Request) Validate() error {
	if err := checkID("customer_id", r.CustomerID); err != nil {
		return err
	}
	r.Currency = strings.ToUpper(r.Currency)
	if !knownCurrency(r.Currency) {
		return fieldErr("currency", "unknown ISO 4217 currency %q", r.Currency)
	}
	if len(r.Items) == 0 {
		return fieldErr("items", "at least one item is required")
	}
	if len(r.Items) > MaxItems {
		return fieldErr("items", "at most %d items", MaxItems)
	}
	for i, it := range r.Items {
		if err := checkID(fmt.Sprintf("items[%d].sku", i), it.SKU); err != nil {
			return err
		}
		if it.Quantity <= 0 {
			return fieldErr(fmt.Sprintf("items[%d].quantity", i), "must be positive")
		}
		if it.UnitAmount <= 0 {
			return fieldErr(fmt.Sprintf("items[%d].unit_amount", i), "must be positive (minor units)")
		}
	}
	if _, err := order.Total(r.Items); err != nil {
		return fieldErr("items", "%v", err)
	}
	if err := checkID("payment_method", r.PaymentMethod); err != nil {
		return err
	}
	return nil
}

// checkID accepts 1-128 visible ASCII characters.
func checkID(field, v string) error {
	if v == "" {
		return fieldErr(field, "is required")
	}
	if len(v) > MaxIDLen {
		return fieldErr(field, "longer than %d characters", MaxIDLen)
	}
	if !order.Visible(v) {
		return fieldErr(field, "must be visible ASCII characters")
	}
	return nil
}

func knownCurrency(c string) bool { return slices.Contains(Currencies(), c) }

// Currencies are the ISO 4217 codes an order may be in.
func Currencies() []string {
	return []string{"USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD", "SEK", "NOK", "DKK", "PLN",
		"CZK", "HUF", "RON", "BGN", "TRY", "ILS", "AED", "SAR", "INR", "SGD", "HKD", "CNY",
		"KRW", "TWD", "THB", "MYR", "IDR", "PHP", "MXN", "BRL", "ARS", "CLP", "COP", "ZAR"}
}

// Fingerprint identifies a request's content, as order.Fingerprint (versioned; a
// version-0 fingerprint, 32 bytes without a version byte, was a SHA-256 of the
// request's Go struct as JSON, which a new optional field would have changed).
func Fingerprint(r Request) []byte {
	return order.Fingerprint(r.CustomerID, r.Currency, r.Items, r.PaymentMethod)
}

// SameRequest reports whether a stored fingerprint, of any version, is r's.
func SameRequest(stored []byte, r Request) bool {
	if len(stored) == sha256.Size { // version 0
		b, _ := json.Marshal(struct {
			CustomerID    string       `json:"customer_id"`
			Currency      string       `json:"currency"`
			Items         []order.Item `json:"items"`
			PaymentMethod string       `json:"payment_method"`
		}{r.CustomerID, r.Currency, r.Items, r.PaymentMethod})
		sum := sha256.Sum256(b)
		return bytes.Equal(stored, sum[:])
	}
	return bytes.Equal(stored, Fingerprint(r))
}

// Fingerprint of the request: ingress.Request.
func (r Request) Fingerprint() []byte { return Fingerprint(r) }

// Same reports whether a stored fingerprint, of any version, is r's.
func (r Request) Same(stored []byte) bool {
	return bytes.Equal(stored, r.Fingerprint()) || SameRequest(stored, r) // the first is the usual case, and cheaper
}

// Order builds the order a workflow will run.
func (r Request) Order(tenant, workflowID string) order.Order {
	total, _ := order.Total(r.Items) // validated
	return order.Order{
		ID: order.IDFor(workflowID), Tenant: tenant, WorkflowID: workflowID,
		CustomerID: r.CustomerID, Currency: r.Currency, Items: r.Items, Amount: total,
		PaymentMethod: r.PaymentMethod,
	}
}
