//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// The provider loses or delays the answers of the PaymentIntent's two writes in
// every way the sandbox can: each row pays two orders through the API and ends with
// the ledger (one charge per order at the provider, net = amount in the payments
// table, nothing pending).
func TestChaosPaymentIntentFaults(t *testing.T) {
	t.Parallel()
	for _, row := range []struct {
		name   string
		faults sandbox.Faults
		env    map[string]string
		search time.Duration // the sandbox's search delay; 0 keeps the rig's
	}{
		{"confirm answers after 3x the client timeout", sandbox.Faults{Only: "confirm", LatencyMS: 3000, Slow: 2},
			map[string]string{"PAYMENTS_TIMEOUT": "1s"}, 0},
		{"create answers after 3x the client timeout", sandbox.Faults{Only: "create", LatencyMS: 3000, Slow: 2},
			map[string]string{"PAYMENTS_TIMEOUT": "1s"}, 0},
		{"saved 500 after the confirm charged", sandbox.Faults{Only: "confirm", FailAfter: 2}, nil, 0},
		{"saved 500 before the confirm ran", sandbox.Faults{Only: "confirm", FailBefore: 2}, nil, 0},
		{"saved 500 after the intent was created", sandbox.Faults{Only: "create", FailAfter: 2}, nil, 0},
		{"saved 500 before the intent was created", sandbox.Faults{Only: "create", FailBefore: 2}, nil, 0},
		{"confirm's answer dropped", sandbox.Faults{Only: "confirm", DropAfter: 2}, nil, 0},
		{"create's answer dropped", sandbox.Faults{Only: "create", DropAfter: 2}, nil, 0},
		{"search 10 min behind, creations lost", sandbox.Faults{Only: "create", FailAfter: 2}, nil, 10 * time.Minute},
	} {
		t.Run(row.name, func(t *testing.T) {
			r := newRig(t)
			if row.search > 0 {
				r.Sim.SetSearchDelay(row.search)
			}
			r.Sim.SetFaults(row.faults)
			r.startWorker(t, row.env)
			r.startAPI(t)
			began := time.Now()
			for i := range 2 {
				r.order(t, fmt.Sprintf("pi-%d", i))
			}
			r.ledger(t, "intent: "+row.name)
			t.Logf("%s: both orders paid within %s", row.name, time.Since(began).Round(time.Second))
			if row.search > 0 && time.Since(began) > row.search/2 {
				t.Fatalf("the orders waited on search: %s", time.Since(began))
			}
		})
	}
}

// settledLedger is the summary line of one order that ends other than PAID: the
// provider's charges and refunds of the order net want, and so do the payments
// rows, none pending.
func (r *rig) settledLedger(t *testing.T, fault, orderID string, status order.Status, want int64) {
	t.Helper()
	stacktest.Eventually(t, 2*time.Minute, "the order to be "+string(status), func() bool {
		return r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND status = $2`, orderID, status) == 1
	})
	var charged, refunded int64
	charges := r.Sim.ChargesForOrder(orderID)
	for _, c := range charges {
		charged += c.Amount
		refunded += c.AmountRefunded
	}
	balanced, pending := r.payments(t)
	line := fmt.Sprintf("%-44s orders=1 status=%s charges=%d provider-net=%d payments-net=amount:%d/1 pending-payments=%d",
		fault, status, len(charges), charged-refunded, balanced, pending)
	t.Log(line)
	appendSummary(line)
	if len(charges) > 1 || charged-refunded != want || balanced != 1 || pending != 0 {
		t.Fatalf("ledger does not balance: %s", line)
	}
}

func TestChaosIntentDeclined(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	status, id := r.postBody(t, "declined", strings.Replace(orderJSON, "pm_card_visa", "pm_card_chargeDeclined", 1))
	if status != 202 {
		t.Fatalf("POST: %d", status)
	}
	r.settledLedger(t, "intent: declined", id, order.StatusPaymentDeclined, 0)
}

// Someone refunds one cent of a paid order at the provider (the dashboard, a
// support tool); then the customer cancels. orderflow refunds what is left, never
// counting the other refund as its own, and the customer is charged nothing.
func TestChaosPartialRefundElsewhereThenCancel(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.apiEnv = map[string]string{"CANCEL_WINDOW": "10m"}
	r.startWorker(t, nil)
	r.startAPI(t)
	status, id := r.postBody(t, "partial", orderJSON)
	if status != 202 {
		t.Fatalf("POST: %d", status)
	}
	stacktest.Eventually(t, time.Minute, "the order to be paid", func() bool {
		return r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND status = 'PAID'`, id) == 1
	})
	var intentID string
	if err := r.Pool.QueryRow(context.Background(), `SELECT payment_ref FROM orders WHERE id = $1`, id).Scan(&intentID); err != nil {
		t.Fatal(err)
	}
	elsewhere := provider.New(provider.Config{URL: r.SimURL, Timeout: 5 * time.Second}, nil)
	if _, err := elsewhere.RefundIntent(context.Background(), "support-tool-1", intentID, 1, nil); err != nil {
		t.Fatal(err)
	}
	if code := r.cancel(t, id); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	r.settledLedger(t, "intent: 1 cent refunded elsewhere, then cancel", id, order.StatusCancelled, 0)
	if n := len(r.Sim.Refunds()); n != 2 {
		t.Fatalf("%d refunds at the provider, want the other party's and ours", n)
	}
}
