package shipment

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/platform/identity"
)

// Request is what a client asks: book a parcel of Grams for Address, known to
// the client as Reference.
type Request struct {
	Reference string `json:"reference"`
	Address   string `json:"address"`
	Grams     int    `json:"weight_grams"`
}

// Decode reads and validates a shipment request: a POST's body or an event's
// "shipment" member. Every error is an *ingress.FieldError.
func Decode(payload json.RawMessage) (ingress.Request, error) {
	var r Request
	if err := ingress.DecodeStrict(payload, &r); err != nil {
		return nil, err
	}
	switch {
	case r.Reference == "" || len(r.Reference) > 64 || !identity.VisibleString(r.Reference):
		return nil, ingress.FieldErrorf("reference", "must be 1-64 visible ASCII characters")
	case r.Address == "" || len(r.Address) > 512:
		return nil, ingress.FieldErrorf("address", "must be 1-512 bytes")
	case r.Grams <= 0 || r.Grams > 70_000:
		return nil, ingress.FieldErrorf("weight_grams", "must be between 1 and 70000")
	}
	return r, nil
}

// Fingerprint decides "same request" for a key or an eventId.
func (r Request) Fingerprint() []byte {
	f := identity.NewFields(64 + len(r.Address))
	f.Add("reference", r.Reference)
	f.Add("address", r.Address)
	f.Add("weight_grams", strconv.Itoa(r.Grams))
	return f.Sum(1)
}

// Same reports whether stored is this request's fingerprint.
func (r Request) Same(stored []byte) bool { return bytes.Equal(stored, r.Fingerprint()) }
