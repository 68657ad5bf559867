// Package refunds is the refund request kind: a client's request to give back some
// or all of what a paid order charged, started by the ingresses as any kind is
// (ingress.Kind) and run by workflows.Refund.
package refunds

import (
	"bytes"
	"encoding/json"
	"math"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/platform/identity"
)

// Request is a refund a client asks for: of an order, for an amount (0: what is
// left of its charge), for a reason.
type Request struct {
	OrderID string
	Amount  int64
	Reason  refund.Reason
}

var _ ingress.Request = Request{}

// Fingerprint of the request: refund.Fingerprint.
func (r Request) Fingerprint() []byte { return refund.Fingerprint(r.OrderID, r.Amount, r.Reason) }

// Same reports whether a stored fingerprint is this request's.
func (r Request) Same(stored []byte) bool { return bytes.Equal(stored, r.Fingerprint()) }

// Refund is the refund a workflow of workflowID runs for the request.
func (r Request) Refund(tenant, workflowID string) refund.Refund {
	return refund.Refund{ID: refund.IDFor(workflowID), Tenant: tenant, WorkflowID: workflowID,
		OrderID: r.OrderID, Amount: r.Amount, Reason: r.Reason}
}

// body is a refund request as JSON: the POST's body (the order is in the path), or
// an event's payload, which names the order.
type body struct {
	OrderID string  `json:"order_id,omitempty"`
	Amount  *int64  `json:"amount"`
	Reason  *string `json:"reason"`
}

// DecodeHTTP reads and validates the body of POST /v1/orders/{id}/refunds, strictly
// as an order's: orderID is the path's.
func DecodeHTTP(data []byte, orderID string) (Request, error) {
	var b struct {
		Amount *int64  `json:"amount"`
		Reason *string `json:"reason"`
	}
	if err := ingress.DecodeStrict(data, &b); err != nil {
		return Request{}, err
	}
	return validate(body{OrderID: orderID, Amount: b.Amount, Reason: b.Reason}, false)
}

// DecodeEvent reads and validates the refund an event carries: order_id is
// required.
func DecodeEvent(data json.RawMessage) (Request, error) {
	var b body
	if err := ingress.DecodeStrict(data, &b); err != nil {
		return Request{}, err
	}
	return validate(b, true)
}

func validate(b body, needOrder bool) (Request, error) {
	r := Request{OrderID: b.OrderID}
	if needOrder {
		if msg := identity.CheckKey(b.OrderID); msg != "" {
			return r, &ingress.FieldError{Field: "order_id", Message: msg}
		}
	}
	if b.Amount != nil {
		if *b.Amount <= 0 || *b.Amount == math.MaxInt64 {
			return r, &ingress.FieldError{Field: "amount", Message: "must be a positive integer (minor units); leave it out to refund what is left"}
		}
		r.Amount = *b.Amount
	}
	if b.Reason != nil {
		r.Reason = refund.Reason(*b.Reason)
		if r.Reason == "" || !r.Reason.Valid() {
			return r, &ingress.FieldError{Field: "reason", Message: "must be duplicate, fraudulent or requested_by_customer"}
		}
	}
	return r, nil
}
