// Package refund is the refund request domain: a client's request to give back
// some or all of what a paid order charged, its identity and its states. Pure and
// deterministic, shared by the workflow, its activities and both ingresses.
package refund

import (
	"strconv"

	"github.com/orderflow/orderflow/platform/identity"
)

// Kind is the name of the refund request kind: it begins each refund's workflow ID
// and scopes its keys in the ingresses' dedup tables.
const Kind = "refund"

// Refund is what a client asked for, plus the identity derived from its workflow.
type Refund struct {
	ID         string `json:"id"`
	Tenant     string `json:"tenant"`
	WorkflowID string `json:"workflow_id"`
	OrderID    string `json:"order_id"`
	// Amount in minor units; 0 asks for what is left of the order's charge when
	// the refund is reserved.
	Amount int64  `json:"amount,omitempty"`
	Reason Reason `json:"reason,omitempty"`
}

// Status is a refund request's state.
type Status string

const (
	// StatusPending: accepted; being reserved or sent to the provider.
	StatusPending Status = "PENDING"
	// StatusSucceeded: the provider refunded it.
	StatusSucceeded Status = "SUCCEEDED"
	// StatusFailed: nothing was refunded, for good (Failure says why): more than
	// what is left of the charge, an order that cannot be refunded, or the
	// provider's refusal.
	StatusFailed Status = "FAILED"
)

// Statuses lists every status.
var Statuses = []Status{StatusPending, StatusSucceeded, StatusFailed}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// Reason is why a refund is made, as the provider records it (Stripe's refund
// reasons).
type Reason string

// The reasons a refund may give; none is fine too.
const (
	ReasonDuplicate           Reason = "duplicate"
	ReasonFraudulent          Reason = "fraudulent"
	ReasonRequestedByCustomer Reason = "requested_by_customer"
)

// Valid reports whether r is empty or a known reason.
func (r Reason) Valid() bool {
	switch r {
	case "", ReasonDuplicate, ReasonFraudulent, ReasonRequestedByCustomer:
		return true
	}
	return false
}

// WorkflowID is the refund's workflow ID: identity.WorkflowID of the refund kind.
func WorkflowID(tenant string, src identity.Source, key string) string {
	return identity.WorkflowID(Kind, tenant, src, key)
}

// IDFor derives the public refund ID from its workflow ID.
func IDFor(workflowID string) string { return identity.PublicID("rfd_", Kind, workflowID) }

// FingerprintVersion is the first byte of every Fingerprint.
const FingerprintVersion = 1

// Fingerprint identifies a refund request's content: a version byte, then a
// SHA-256 of order_id, amount and reason, each as len(name):name=len(value):value;.
func Fingerprint(orderID string, amount int64, reason Reason) []byte {
	f := identity.NewFields(96)
	f.Add("order_id", orderID)
	f.Add("amount", strconv.FormatInt(amount, 10))
	f.Add("reason", string(reason))
	return f.Sum(FingerprintVersion)
}

// Fingerprint of the refund's content.
func (r Refund) Fingerprint() []byte { return Fingerprint(r.OrderID, r.Amount, r.Reason) }
