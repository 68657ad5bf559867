package orders

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/ingress"
)

const valid = `{"customer_id":"cus_1","currency":"usd","items":[{"sku":"sku-1","quantity":2,"unit_amount":1299}],"payment_method":"pm_card_visa"}`

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		field string // "" means valid
	}{
		{"valid", valid, ""},
		{"unknown field", `{"customer_id":"c","currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":1}],"payment_method":"pm","card_number":"4242"}`, "card_number"},
		{"zero quantity", strings.Replace(valid, `"quantity":2`, `"quantity":0`, 1), "items[0].quantity"},
		{"negative amount", strings.Replace(valid, `"unit_amount":1299`, `"unit_amount":-5`, 1), "items[0].unit_amount"},
		{"int64 overflow", strings.Replace(valid, `"quantity":2`, `"quantity":9223372036854775808`, 1), "items.quantity"},
		{"float", strings.Replace(valid, `"quantity":2`, `"quantity":1.5`, 1), "items.quantity"},
		{"total overflow", strings.Replace(valid, `"quantity":2`, `"quantity":9223372036854775807`, 1), "items"},
		{"unknown currency", strings.Replace(valid, `"usd"`, `"XXX"`, 1), "currency"},
		{"empty items", `{"customer_id":"c","currency":"USD","items":[],"payment_method":"pm"}`, "items"},
		{"missing customer", `{"currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":1}],"payment_method":"pm"}`, "customer_id"},
		{"missing payment method", `{"customer_id":"c","currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":1}]}`, "payment_method"},
		{"wrong type", strings.Replace(valid, `"cus_1"`, `42`, 1), "customer_id"},
		{"not JSON", `customer=1`, "body"},
		{"empty", ``, "body"},
		{"trailing data", valid + `{}`, "body"},
		{"array", `[1,2]`, "body"},
		{"non-UTF-8", strings.Replace(valid, "cus_1", "cus_\xff", 1), "body"},
		{"deep nesting", strings.Repeat("[", 50) + strings.Repeat("]", 50), "body"},
		{"null", `null`, "customer_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeRequest([]byte(tt.body))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if r.Currency != "USD" {
					t.Fatalf("currency not normalised: %q", r.Currency)
				}
				return
			}
			var fe *ingress.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want a FieldError on %q", err, tt.field)
			}
		})
	}
}

func TestFingerprintIgnoresFormatting(t *testing.T) {
	a, err := DecodeRequest([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	reordered := `{ "payment_method": "pm_card_visa", "items": [ {"unit_amount":1299, "quantity":2, "sku":"sku-1"} ],
		"currency": "USD", "customer_id": "cus_1" }`
	b, err := DecodeRequest([]byte(reordered))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Fingerprint(a), Fingerprint(b)) {
		t.Fatal("same request, different fingerprints")
	}
	b.Items[0].Quantity = 3
	if bytes.Equal(Fingerprint(a), Fingerprint(b)) {
		t.Fatal("different requests, same fingerprint")
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{valid, `{}`, `null`, `[]`, `{"items":[{"quantity":1e400}]}`, strings.Repeat("{", 100), "\xff\xfe", `{"customer_id":"c","currency":"USD","items":[{"sku":"a","quantity":9223372036854775807,"unit_amount":2}],"payment_method":"p"}`,
		strings.Replace(valid, "cus_1", `cus\u0000`, 1), strings.Replace(valid, "sku-1", "sku-\xc3\x28", 1), strings.Replace(valid, "pm_card_visa", `pm_\ud800`, 1)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRequest(data)
		if err != nil {
			var fe *ingress.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		// An accepted request re-encodes to an equal, still valid request.
		b, _ := json.Marshal(r)
		again, err := DecodeRequest(b)
		if err != nil {
			t.Fatalf("re-encoded request rejected: %v", err)
		}
		if !bytes.Equal(Fingerprint(r), Fingerprint(again)) {
			t.Fatal("fingerprint changed across a round trip")
		}
		if o := r.Order("t", "order:t:k"); o.Amount <= 0 {
			t.Fatalf("accepted order with amount %d", o.Amount)
		}
	})
}

// The stored fingerprint of a request must not change unless FingerprintVersion
// does: idempotency rows outlive deploys.
func TestFingerprintVector(t *testing.T) {
	r, err := DecodeRequest([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	const want = "014c531489f7744306a1210d8197a3beccd437d307592865190413adc9e13f146b" // cross-checked with Python's hashlib
	if got := hex.EncodeToString(Fingerprint(r)); got != want {
		t.Fatalf("Fingerprint = %s, want %s", got, want)
	}
}

// Rows written before the versioned fingerprint (version 0: a SHA-256 of the JSON of
// the request struct) still match the same request, and only it.
func TestSameRequestAcceptsVersion0(t *testing.T) {
	r, err := DecodeRequest([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	v0 := sha256.Sum256([]byte(`{"customer_id":"cus_1","currency":"USD","items":[{"sku":"sku-1","quantity":2,"unit_amount":1299}],"payment_method":"pm_card_visa"}`))
	if !SameRequest(v0[:], r) || !SameRequest(Fingerprint(r), r) {
		t.Fatal("a stored fingerprint of the same request does not match")
	}
	r.Items[0].Quantity = 3
	if SameRequest(v0[:], r) || SameRequest(Fingerprint(request(t, valid)), r) {
		t.Fatal("another request matches")
	}
}
