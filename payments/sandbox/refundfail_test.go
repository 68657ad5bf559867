package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/sandbox"
)

// refundOnCard pays an order with card and refunds 300 of it.
func refundOnCard(t *testing.T, c *provider.Client, card, orderID string) (provider.Intent, provider.Refund) {
	t.Helper()
	ctx := context.Background()
	md := map[string]string{"order_id": orderID}
	pi, err := c.CreateIntent(ctx, "create-"+orderID, 1000, "EUR", card, md)
	if err != nil {
		t.Fatal(err)
	}
	if pi, err = c.ConfirmIntent(ctx, "confirm-"+orderID, pi.ID); err != nil || pi.Status != "succeeded" {
		t.Fatalf("confirm: %+v, %v", pi, err)
	}
	re, err := c.RefundIntent(ctx, "refund-"+orderID, pi.ID, 300, map[string]string{"order_id": orderID})
	if err != nil {
		t.Fatal(err)
	}
	return pi, re
}

// failed waits for the intent's one refund to fail and checks what every view
// shows then: the refund failed with its reason, the charge refunded nothing.
func failed(t *testing.T, sim *sandbox.Server, c *provider.Client, pi provider.Intent, re provider.Refund) {
	t.Helper()
	var refunds []provider.Refund
	waitFor(t, "the refund to fail", func() bool {
		var err error
		refunds, err = c.IntentRefunds(context.Background(), pi.ID)
		return err == nil && len(refunds) == 1 && refunds[0].Status == "failed"
	})
	if got := refunds[0]; got.ID != re.ID || got.FailureReason != "expired_or_canceled_card" || got.Amount != 300 {
		t.Fatalf("the failed refund: %+v", got)
	}
	if byCharge, err := c.ListRefunds(context.Background(), pi.Charge); err != nil || len(byCharge) != 1 || byCharge[0].Status != "failed" {
		t.Fatalf("the charge's refunds: %+v, %v", byCharge, err)
	}
	charges := sim.ChargesForOrder(pi.Metadata["order_id"])
	if len(charges) != 1 || charges[0].ID != pi.Charge || charges[0].AmountRefunded != 0 || charges[0].Refunded {
		t.Fatalf("the charge after the refund failed: %+v", charges)
	}
}

// Stripe's refund failure test card: the refund answers succeeded and counts on
// the charge; after the delay it has failed, the charge is refunded nothing, and
// charge.refund.updated carries the failed refund to the webhook endpoint.
func TestRefundOfTheRefundFailCardFailsLater(t *testing.T) {
	sim := sandbox.New(quiet(), sandbox.Options{RefundFailAfter: 300 * time.Millisecond})
	t.Cleanup(sim.Close)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	c := provider.New(provider.Config{URL: srv.URL, APIKey: "sk_test", Timeout: 2 * time.Second}, nil)
	rc := &receiver{secret: "whsec_test"}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	sim.SetWebhooks(sandbox.Webhooks{URL: hook.URL, Secrets: []string{"whsec_test"}, RetryMS: 20})

	pi, re := refundOnCard(t, c, "pm_card_refundFail", "ord_fail")
	if re.Status != "succeeded" {
		t.Fatalf("the refund answered %+v, want succeeded", re)
	}
	if charges := sim.ChargesForOrder("ord_fail"); charges[0].AmountRefunded != 300 {
		t.Fatalf("the charge while the refund stands: %+v", charges)
	}
	failed(t, sim, c, pi, re)
	var updated []stripe.Event
	waitFor(t, "charge.refund.updated", func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		updated = updated[:0]
		for _, ev := range rc.events {
			if ev.Type == "charge.refund.updated" {
				updated = append(updated, ev)
			}
		}
		return len(updated) > 0
	})
	var obj map[string]any
	if err := json.Unmarshal(updated[0].Data.Raw, &obj); err != nil {
		t.Fatal(err)
	}
	md, _ := obj["metadata"].(map[string]any)
	if obj["object"] != "refund" || obj["id"] != re.ID || obj["status"] != "failed" || obj["failure_reason"] != "expired_or_canceled_card" ||
		obj["payment_intent"] != pi.ID || obj["charge"] != pi.Charge || md["order_id"] != "ord_fail" {
		t.Fatalf("charge.refund.updated's object: %v", obj)
	}
	// The amount is refundable again.
	if again, err := c.RefundIntent(context.Background(), "refund-again", pi.ID, 1000, nil); err != nil || again.Amount != 1000 {
		t.Fatalf("a refund of the whole charge after the failure: %+v, %v", again, err)
	}
}

// The sandbox's own card whose refunds start pending, then fail; and a failure
// still pending when the sandbox stops happens after it starts again.
func TestRefundStillToFailSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	o := sandbox.Options{RefundFailAfter: time.Second}
	_, c, stop := open(t, path, o)
	pi, re := refundOnCard(t, c, "pm_card_sandbox_refundFailPending", "ord_pending")
	if re.Status != "pending" {
		t.Fatalf("the refund answered %+v, want pending", re)
	}
	stop()
	sim, c, _ := open(t, path, o)
	failed(t, sim, c, pi, re)
}

// A refund's failure that fired before Close saves the state before Close
// returns: after it nothing writes the file, which a restart's next sandbox
// reads (and a test's TempDir removes). Each round fails a refund within a
// millisecond of the close.
func TestCloseWaitsForAFailureSavingTheState(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		path := filepath.Join(dir, fmt.Sprintf("state-%d.json", i))
		_, c, stop := open(t, path, sandbox.Options{RefundFailAfter: time.Millisecond})
		refundOnCard(t, c, "pm_card_sandbox_refundFailPending", "ord_closing")
		stop()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Fatalf("round %d: %s is being written after Close returned", i, e.Name())
			}
		}
	}
}
