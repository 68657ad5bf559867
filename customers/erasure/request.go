// Package erasure is the erasure of a customer: a kind of workflow like orders
// and refund requests, started by DELETE /v1/customers/{id} or an event, that
// waits while the customer's money can still move, erases what is not sealed
// under the customer's key, destroys the key, and answers a signed receipt.
//
// Nothing personal enters its workflow: its input holds the customer's keyed
// hash, never the ID.
package erasure

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/platform/identity"
)

// KindName begins erasures' workflow IDs.
const KindName = "erasure"

// Request is an erasure request: the customer's ID, as the tenant's orders carry it.
type Request struct {
	CustomerID string `json:"customer_id"`
	// print is the keyed fingerprint (see Decoder): a plain digest of an ID
	// could be matched against guesses.
	print []byte
}

// Decoder reads erasure requests; key keys their fingerprints.
type Decoder struct{ key []byte }

// NewDecoder is the decoder whose fingerprints are keyed with key.
func NewDecoder(key []byte) Decoder { return Decoder{key: key} }

// Decode reads and validates a request; every error is an *ingress.FieldError.
func (d Decoder) Decode(payload json.RawMessage) (ingress.Request, error) {
	var r Request
	if err := ingress.DecodeStrict(payload, &r); err != nil {
		return nil, err
	}
	if r.CustomerID == "" || len(r.CustomerID) > 128 || !identity.VisibleString(r.CustomerID) {
		return nil, ingress.FieldErrorf("customer_id", "must be 1-128 visible ASCII characters")
	}
	m := hmac.New(sha256.New, d.key)
	m.Write([]byte("erasure\x00" + r.CustomerID))
	r.print = append([]byte{1}, m.Sum(nil)...)
	return r, nil
}

// Fingerprint decides "same request" for a key or an eventId.
func (r Request) Fingerprint() []byte { return r.print }

// Same reports whether stored is this request's fingerprint.
func (r Request) Same(stored []byte) bool { return bytes.Equal(stored, r.print) }

// Input is an erasure's workflow input.
type Input struct {
	Tenant       string `json:"tenant"`
	WorkflowID   string `json:"workflow_id"`
	ID           string `json:"id"` // era_...
	CustomerHash []byte `json:"customer_hash"`
	Print        []byte `json:"print"`
}
