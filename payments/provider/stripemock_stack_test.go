//go:build stack

package provider_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// TestStripeMockAcceptsEveryRequest sends every kind of request the worker makes
// to stripe-mock, Stripe's own mock, which checks each against Stripe's OpenAPI
// spec and refuses (400) what the real API would refuse: a wrong parameter name, a
// missing one, a wrong type. Its answers are fixtures, so only acceptance is
// checked.
func TestStripeMockAcceptsEveryRequest(t *testing.T) {
	bin := stacktest.Env(t)["STRIPE_MOCK_BIN"]
	if _, err := os.Stat(bin); bin == "" || err != nil {
		t.Fatalf("stripe-mock is not built (%q: %v): run scripts/stack up", bin, err)
	}
	addr := stacktest.FreeAddr(t)
	stacktest.Start(t, bin, map[string]string{}, "-http-addr", addr)
	base := "http://" + addr
	stacktest.Eventually(t, 30*time.Second, "stripe-mock to listen", func() bool {
		resp, err := http.Get(base + "/v1/payment_intents/pi_x")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	c := provider.New(provider.Config{URL: base, APIKey: "sk_test_123", Timeout: 10 * time.Second}, nil)
	withReturn := provider.New(provider.Config{URL: base, APIKey: "sk_test_123", Timeout: 10 * time.Second,
		ReturnURL: "https://shop.example/return"}, nil)
	ctx := context.Background()
	md := map[string]string{"order_id": "ord_1", "tenant": "acme"}
	requests := []struct {
		name string
		send func() error
	}{
		{"create a PaymentIntent", func() error {
			_, err := c.CreateIntent(ctx, "ofpay_create", 1299, "USD", "pm_card_visa", md)
			return err
		}},
		{"confirm it", func() error { _, err := c.ConfirmIntent(ctx, "ofpay_confirm", "pi_123"); return err }},
		{"confirm it with a return URL (3-D Secure)", func() error {
			_, err := withReturn.ConfirmIntent(ctx, "ofpay_confirm2", "pi_123")
			return err
		}},
		{"retrieve it", func() error { _, err := c.RetrieveIntent(ctx, "pi_123"); return err }},
		{"cancel it", func() error { _, err := c.CancelIntent(ctx, "ofpay_cancel", "pi_123"); return err }},
		{"search intents by order", func() error { _, err := c.SearchIntents(ctx, "ord_1"); return err }},
		{"refund an intent", func() error {
			_, err := c.RefundIntent(ctx, "ofpay_refund", "pi_123", 1299, map[string]string{"order_id": "ord_1", "orderflow_refund_key": "ofpay_refund"})
			return err
		}},
		{"list an intent's refunds", func() error { _, err := c.IntentRefunds(ctx, "pi_123"); return err }},
		{"charge (Charges API)", func() error {
			_, err := c.Charge(ctx, "ofpay_charge", 1299, "USD", "tok_visa", "ord_1")
			return err
		}},
		{"refund a charge", func() error { _, err := c.Refund(ctx, "ofpay_refund2", "ch_123", 1299); return err }},
		{"search charges by order", func() error { _, err := c.SearchCharges(ctx, "ord_1"); return err }},
		{"list a charge's refunds", func() error { _, err := c.ListRefunds(ctx, "ch_123"); return err }},
	}
	for _, r := range requests {
		err := r.send()
		var perr *provider.Error
		if errors.As(err, &perr) {
			t.Errorf("%s: stripe-mock refused it: %v", r.name, err)
		} else if err != nil {
			t.Errorf("%s: %v", r.name, err)
		}
	}
	t.Logf("stripe-mock accepted %d kinds of request, pinned to API version %s", len(requests), provider.APIVersion)
}
