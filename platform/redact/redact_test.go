package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestSecrets(t *testing.T) {
	tests := []struct {
		in   string
		gone []string // must not survive
		kept []string // must survive
	}{
		{"No such PaymentMethod: 'pm_1NqW2eLkdIwHu7ix'", []string{"pm_1NqW2eLkdIwHu7ix"}, []string{"No such PaymentMethod: 'pm_…#"}},
		{"No such customer: 'cus_9s6XKzkNRiz8i3'; a similar object exists in live mode", []string{"cus_9s6XKzkNRiz8i3"}, []string{"cus_…#", "live mode"}},
		{"payment_method pm_card_visa on pi_3Nx2 declined, charge ch_1 refund re_2", []string{"pm_card_visa"}, []string{"pi_3Nx2", "ch_1", "re_2"}},
		{"client secret pi_3Nx2_secret_AbCdEf was sent", []string{"AbCdEf"}, []string{"pi_3Nx2_secret_…#"}},
		{"card 4242 4242 4242 4242 and 4000002500003155", []string{"4242 4242 4242 4242", "4000002500003155"}, []string{"card number… and number…"}},
		{"Invalid API Key provided: sk_test_51Hxyz and of_0123456789ab_secretpart", []string{"sk_test_51Hxyz", "secretpart"}, []string{"Invalid API Key provided: sk_"}},
		{"order ord_abc amount 1299 usd", nil, []string{"order ord_abc amount 1299 usd"}},
	}
	for _, tt := range tests {
		got := Secrets(tt.in)
		for _, g := range tt.gone {
			if strings.Contains(got, g) {
				t.Errorf("Secrets(%q) = %q: %q survived", tt.in, got, g)
			}
		}
		for _, k := range tt.kept {
			if !strings.Contains(got, k) {
				t.Errorf("Secrets(%q) = %q: want %q kept", tt.in, got, k)
			}
		}
	}
	digest := Secrets("pm_x1")
	if Secrets("pm_x1") != digest || digest == Secrets("pm_x2") {
		t.Error("the digest must tell values apart, the same way every time")
	}
}

// A card number has no hint: a digest of it, even cut short, is found by
// hashing the 10^8 numbers its BIN and last four leave.
func TestCardNumberHasNoHint(t *testing.T) {
	const card = "4242 4242 4242 4242"
	got := Secrets("card " + card + " declined")
	if got != "card number… declined" {
		t.Fatalf("%q, want no hint", got)
	}
	for _, v := range []string{card, "4242424242424242"} {
		sum := sha256.Sum256([]byte(v))
		if strings.Contains(got, hex.EncodeToString(sum[:4])) {
			t.Errorf("%q holds the digest of %q", got, v)
		}
	}
}
