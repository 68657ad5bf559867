//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// netCharged is what the provider still holds of an order's charges: charged
// less every refund that moved or may still move money.
func (r *rig) netCharged(orderID string) int64 {
	var n int64
	for _, c := range r.Sim.ChargesForOrder(orderID) {
		n += c.Amount - c.AmountRefunded
	}
	return n
}

// intentOfOrder is the order's PaymentIntent as its row records it.
func (r *rig) intentOfOrder(t *testing.T, orderID string) string {
	t.Helper()
	var ref string
	if err := r.Pool.QueryRow(context.Background(), `SELECT payment_ref FROM orders WHERE id = $1`, orderID).Scan(&ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// cancelUnderWay reports whether the order's cancel has sent its refund, or
// tried to and was told to wait (its RefundIntent is retried).
func (r *rig) cancelUnderWay(t *testing.T, orderID string) bool {
	t.Helper()
	if _, cancels, _ := r.providerRefunds(t, orderID); cancels > 0 {
		return true
	}
	var wf string
	if err := r.Pool.QueryRow(context.Background(), `SELECT workflow_id FROM orders WHERE id = $1`, orderID).Scan(&wf); err != nil {
		t.Fatal(err)
	}
	desc, err := r.Temporal.DescribeWorkflow(context.Background(), wf, "")
	if err != nil {
		return false
	}
	for _, pa := range desc.RawResponse.GetPendingActivities() {
		if pa.GetActivityType().GetName() == "RefundIntent" && pa.GetAttempt() >= 2 {
			return true
		}
	}
	return false
}

// A refund request of 500 is reserved while the provider holds its refund for
// 40 s; the customer cancels the order at once, and a support agent refunds 100
// in the dashboard. A reservation is not money: the cancel waits for the
// request's refund to land before it weighs what is left, so the order ends
// CANCELLED with nothing charged, whatever the request's refund becomes; the
// dashboard's refund is one finding. The cancel's answer waits 30 s at most:
// past it the cancel, accepted, is under way and answered so (200, the order
// as it stands), never 503.
func TestChaosCancelWaitsForAHeldRefund(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.apiEnv = map[string]string{"CANCEL_WINDOW": "15m"}
	r.startWorker(t, nil)
	r.startAPI(t)
	r.reconciler(t)
	id := r.paidOrder(t, "held-refund")
	r.Sim.SetFaults(sandbox.Faults{Only: "refund", LatencyMS: 40_000, Slow: 1})
	if code, body := r.requestRefund(t, id, "held-500", 500); code != 202 && code != 201 {
		t.Fatalf("refund: %d %s", code, body)
	}
	stacktest.Eventually(t, time.Minute, "the refund reserved", func() bool {
		return r.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1 AND amount = 500`, id) == 1
	})
	// The dashboard's refund goes while the cancel runs.
	cancelled := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.apiAddr+"/v1/orders/"+id+"/cancel", nil)
		req.Header.Set("Authorization", "Bearer "+r.apiKey)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 && resp.StatusCode != 202 {
				err = fmt.Errorf("cancel: %d", resp.StatusCode)
			}
		}
		cancelled <- err
	}()
	stacktest.Eventually(t, time.Minute, "the cancel under way", func() bool {
		return r.cancelUnderWay(t, id)
	})
	dashboard := provider.New(provider.Config{URL: r.SimURL, Timeout: 5 * time.Second}, nil)
	if _, err := dashboard.RefundIntent(context.Background(), stacktest.Name("dashboard"), r.intentOfOrder(t, id), 100, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
	r.waitStatus(t, id, order.StatusCancelled, 3*time.Minute)
	r.refundsSettled(t, id, 1, 2*time.Minute)
	requests, cancels, outside := r.providerRefunds(t, id)
	line := fmt.Sprintf("%-44s net-charged=%d requests=%d cancels=%d outside=%d", "refunds: a cancel beside a held refund",
		r.netCharged(id), requests, cancels, outside)
	t.Log(line)
	appendSummary(line)
	if r.netCharged(id) != 0 || requests+cancels+outside != 1299 || outside != 100 {
		t.Fatalf("the cancelled order is not refunded in full: %s", line)
	}
	stacktest.Eventually(t, reconcileWithin, "the dashboard's refund reported", func() bool {
		return r.count(t, `SELECT count(*) FROM reconcile_findings WHERE order_id = $1`, id) > 0
	})
	// Followed while the cancel waited, or reported after it: one finding either way.
	if n := r.count(t, `SELECT count(*) FROM reconcile_findings WHERE order_id = $1 AND kind = $2 AND action IN ($3, $4)`, id,
		reconcile.KindRefundElsewhere, reconcile.ActionOrderFollowed, reconcile.ActionReported); n != 1 {
		t.Fatalf("%d findings of the dashboard's refund, want 1", n)
	}
	if n := r.count(t, `SELECT count(*) FROM reconcile_findings WHERE order_id = $1`, id); n != 1 {
		t.Fatalf("%d findings for the order, want the dashboard's refund only", n)
	}
}

// refundFailJSON pays an order of 1299 with Stripe's test card whose refunds
// succeed, then fail 30 s later (the sandbox's default).
var refundFailJSON = strings.Replace(refundableJSON, "pm_card_visa", "pm_card_refundFail", 1)

// refundsWith counts the order's refund requests of status.
func (r *rig) refundsWith(t *testing.T, orderID string, status refund.Status) int {
	return r.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1 AND status = $2`, orderID, status)
}

// A refund of 300 succeeds, and the provider fails it 30 s later (Stripe's test
// card 4000 0000 0000 5126), telling orderflow only by its webhook: the request
// ends FAILED with the provider's reason, its share is released and the order
// is PAID again; a refund of all that is left then refunds 1299, so the customer
// is refunded once in all. When that one fails too, the order is PAID again and
// the ledger nets the charge.
func TestChaosARefundTheProviderFailsLater(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.withWebhooks("2s")
	r.startWorker(t, nil)
	r.startAPI(t)
	r.refundFailsLater(t, "refunds: one the provider fails later")
}

// The same with no webhook reaching orderflow: the reconciler's lists find each
// failed refund (a refund_failed finding) and the order follows it back.
func TestChaosARefundTheProviderFailsLaterWithoutItsWebhook(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	r.reconciler(t)
	r.refundFailsLater(t, "refunds: one failed later, found by a pass")
	stacktest.Eventually(t, 30*time.Second, "a refund_failed finding per failed refund", func() bool {
		return r.count(t, `SELECT count(*) FROM reconcile_findings WHERE kind = $1 AND tenant = $2`, reconcile.KindRefundFailed, r.tenant) == 2
	})
}

// refundFailsLater runs the refund that fails later, and the refund of the rest.
func (r *rig) refundFailsLater(t *testing.T, fault string) {
	t.Helper()
	id := r.place(t, "refund-fails-later", refundFailJSON)
	r.waitStatus(t, id, order.StatusPaid, time.Minute)
	if code, body := r.requestRefund(t, id, "fails-later", 300); code != 202 && code != 201 {
		t.Fatalf("refund: %d %s", code, body)
	}
	r.waitStatus(t, id, order.StatusPartiallyRefunded, time.Minute)
	stacktest.Eventually(t, 2*time.Minute, "the refund failed by the provider", func() bool {
		return r.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1 AND status = 'FAILED' AND failure LIKE 'provider_failed: %'`, id) == 1
	})
	r.waitStatus(t, id, order.StatusPaid, time.Minute)
	if code, body := r.requestRefund(t, id, "the-rest", 0); code != 202 && code != 201 {
		t.Fatalf("refund of the rest: %d %s", code, body)
	}
	r.waitStatus(t, id, order.StatusRefunded, time.Minute)
	requests, cancels, outside := r.providerRefunds(t, id)
	var rest int64
	if err := r.Pool.QueryRow(context.Background(), `SELECT amount FROM refunds WHERE order_id = $1 AND status = 'SUCCEEDED'`, id).Scan(&rest); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("%-44s refunded=%d (requests=%d cancels=%d outside=%d) rest=%d", fault,
		requests+cancels+outside, requests, cancels, outside, rest)
	t.Log(line)
	appendSummary(line)
	if requests+cancels+outside != 1299 || rest != 1299 {
		t.Fatalf("the customer is not refunded once in all: %s", line)
	}
	// The card fails every refund: the second one too, and the order is PAID again.
	stacktest.Eventually(t, 2*time.Minute, "the second refund failed by the provider", func() bool {
		return r.refundsWith(t, id, refund.StatusFailed) == 2
	})
	r.waitStatus(t, id, order.StatusPaid, time.Minute)
	if balanced, pending := r.payments(t); balanced != 1 || pending != 0 {
		t.Fatalf("payments ledger: %d of 1 orders balanced, %d pending", balanced, pending)
	}
	stacktest.Eventually(t, 30*time.Second, "the events of the reversals", func() bool {
		types := r.eventTypes(t)[id]
		n := 0
		for _, typ := range types {
			if typ == activities.EventRefundFailed || typ == activities.EventOrderRefundReversed {
				n++
			}
		}
		return n >= 4
	})
}

// An operator terminates a refund request's workflow once its 500 is reserved,
// while the provider refuses refunds: nothing moved, and within one reconcile
// pass the request ends FAILED, its reservation released; a refund of all that
// is left then refunds 1299.
func TestChaosRefundWorkflowTerminatedAfterItsReservation(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	r.reconciler(t)
	id := r.paidOrder(t, "terminated-refund")
	r.Sim.SetFaults(sandbox.Faults{Only: "refund", Unavailable: 1000})
	if code, body := r.requestRefund(t, id, "to-terminate", 500); code != 202 && code != 201 {
		t.Fatalf("refund: %d %s", code, body)
	}
	var wf string
	stacktest.Eventually(t, time.Minute, "the refund reserved", func() bool {
		_ = r.Pool.QueryRow(context.Background(), `SELECT workflow_id FROM refunds WHERE order_id = $1 AND amount = 500`, id).Scan(&wf)
		return wf != ""
	})
	r.operator(t, "workflow", "terminate", "--workflow-id", wf, "--reason", "operator")
	r.Sim.SetFaults(sandbox.Faults{})
	stacktest.Eventually(t, reconcileWithin, "the reservation released", func() bool {
		return r.count(t, `SELECT count(*) FROM refunds WHERE workflow_id = $1 AND status = 'FAILED'`, wf) == 1
	})
	r.found(t, id, reconcile.KindRefundWorkflowEnded, reconcile.ActionReservationReleased)
	if code, body := r.requestRefund(t, id, "after-terminated", 0); code != 202 && code != 201 {
		t.Fatalf("refund of the rest: %d %s", code, body)
	}
	r.waitStatus(t, id, order.StatusRefunded, time.Minute)
	requests, cancels, outside := r.providerRefunds(t, id)
	line := fmt.Sprintf("%-44s refunded=%d released=1", "refunds: a workflow terminated after reserving", requests+cancels+outside)
	t.Log(line)
	appendSummary(line)
	if requests+cancels+outside != 1299 {
		t.Fatalf("refunded %d, want 1299", requests+cancels+outside)
	}
}
