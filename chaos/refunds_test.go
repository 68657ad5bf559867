//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// An order of 1299: twenty refunds of 100 cannot all fit.
const refundableJSON = `{"customer_id":"cus_1","currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":1299}],"payment_method":"pm_card_visa"}`

// paidOrder places an order of 1299 and waits for it to be PAID.
func (r *rig) paidOrder(t *testing.T, key string) string {
	t.Helper()
	id := r.place(t, key, refundableJSON)
	r.waitStatus(t, id, order.StatusPaid, time.Minute)
	return id
}

// requestRefund POSTs a refund of the order with key (amount 0 asks for the
// rest), retrying with the key while the first request runs or a dependency is
// down, as a careful client does.
func (r *rig) requestRefund(t *testing.T, orderID, key string, amount int64) (int, []byte) {
	t.Helper()
	body := `{"reason":"requested_by_customer"}`
	if amount > 0 {
		body = fmt.Sprintf(`{"amount":%d,"reason":"requested_by_customer"}`, amount)
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequest(http.MethodPost, "http://"+r.apiAddr+"/v1/orders/"+orderID+"/refunds", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+r.apiKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			inProgress := resp.StatusCode == http.StatusConflict && strings.Contains(b.String(), "request-in-progress")
			if !inProgress && resp.StatusCode != http.StatusServiceUnavailable {
				return resp.StatusCode, b.Bytes()
			}
		}
		if attempt > 60 {
			t.Fatalf("refund %s: no answer (%v)", key, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// produceRefund writes a plain refund event of the order.
func (r *rig) produceRefund(t *testing.T, w *kafka.Writer, eventID, orderID string, amount int64) {
	t.Helper()
	value := fmt.Sprintf(`{"eventId":%q,"tenant":%q,"refund":{"order_id":%q,"amount":%d}}`, eventID, r.tenant, orderID, amount)
	if err := w.WriteMessages(context.Background(), kafka.Message{Key: []byte(r.tenant), Value: []byte(value)}); err != nil {
		t.Errorf("produce refund %s: %v", eventID, err)
	}
}

// refundsSettled waits for the order's n refund requests to settle.
func (r *rig) refundsSettled(t *testing.T, orderID string, n int, within time.Duration) {
	t.Helper()
	stacktest.Eventually(t, within, fmt.Sprintf("%d refunds of %s to settle", n, orderID), func() bool {
		return r.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1 AND status <> 'PENDING'`, orderID) == n
	})
}

// providerRefunds are the refunds the provider holds of an order's intent, by who
// made them: refund requests, the order's cancel, and anyone else.
func (r *rig) providerRefunds(t *testing.T, orderID string) (requests, cancels, outside int64) {
	t.Helper()
	var intent string
	if err := r.Pool.QueryRow(context.Background(), `SELECT payment_ref FROM orders WHERE id = $1`, orderID).Scan(&intent); err != nil {
		t.Fatal(err)
	}
	for _, re := range r.Sim.Refunds() {
		if re.PaymentIntent != intent || (re.Status != "succeeded" && re.Status != "pending") {
			continue
		}
		switch {
		case re.Metadata["orderflow_refund_request"] != "":
			requests += re.Amount
		case re.Metadata["orderflow_refund_key"] != "":
			cancels += re.Amount
		default:
			outside += re.Amount
		}
	}
	return requests, cancels, outside
}

// refundLedger is the summary line of a row with refunds: the provider's refunds
// of the order are the refund requests that succeeded, the cancels and the
// outside refunds; the order's amount_refunded is what the provider refunded;
// never more refunded than charged; the payments ledger nets the rest.
func (r *rig) refundLedger(t *testing.T, fault, orderID string, status order.Status) {
	t.Helper()
	stacktest.Eventually(t, 2*time.Minute, "the order to be "+string(status), func() bool {
		return r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND status = $2`, orderID, status) == 1
	})
	requests, cancels, outside := r.providerRefunds(t, orderID)
	total := requests + cancels + outside
	var succeeded, amountRefunded, charged int64
	if err := r.Pool.QueryRow(context.Background(), `SELECT COALESCE(sum(amount) FILTER (WHERE status = 'SUCCEEDED'), 0) FROM refunds WHERE order_id = $1`,
		orderID).Scan(&succeeded); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, time.Minute, "the order's amount_refunded to follow the provider", func() bool {
		_ = r.Pool.QueryRow(context.Background(), `SELECT COALESCE(amount_refunded, 0), amount FROM orders WHERE id = $1`, orderID).Scan(&amountRefunded, &charged)
		return amountRefunded == total || status == order.StatusCancelled
	})
	balanced, pending := r.payments(t)
	orders := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, r.tenant)
	line := fmt.Sprintf("%-44s charged=%d provider-refunds=%d requests=%d/%d cancels=%d outside=%d amount_refunded=%d payments-net=amount:%d/%d pending-payments=%d",
		fault, charged, total, requests, succeeded, cancels, outside, amountRefunded, balanced, orders, pending)
	t.Log(line)
	appendSummary(line)
	if total > charged || requests != succeeded || (status != order.StatusCancelled && amountRefunded != total) || balanced != orders || pending != 0 {
		t.Fatalf("ledger does not balance: %s", line)
	}
}

// Twenty refund requests of 100 on an order of 1299, ten by HTTP (each sent twice
// at once with its key) and ten by Kafka (each event twice), while a support tool
// refunds 150 in the provider's dashboard: never more refunded than charged, one
// refund per key and per event, and the order follows the provider.
func TestChaosConcurrentRefundsOverBothIngresses(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	id := r.paidOrder(t, "refunded")
	var intent string
	if err := r.Pool.QueryRow(context.Background(), `SELECT payment_ref FROM orders WHERE id = $1`, id).Scan(&intent); err != nil {
		t.Fatal(err)
	}
	w := r.writer()
	defer w.Close()
	var wg sync.WaitGroup
	for i := range 10 {
		for range 2 {
			wg.Go(func() {
				if code, body := r.requestRefund(t, id, fmt.Sprintf("refund-%d", i), 100); code != 202 && code != 201 {
					t.Errorf("refund-%d: %d %s", i, code, body)
				}
			})
			wg.Go(func() { r.produceRefund(t, w, fmt.Sprintf("refund-event-%d", i), id, 100) })
		}
	}
	wg.Go(func() {
		dashboard := provider.New(provider.Config{URL: r.SimURL, Timeout: 5 * time.Second}, nil)
		_, _ = dashboard.RefundIntent(context.Background(), "dashboard-150", intent, 150, nil) // refused if too late
	})
	wg.Wait()
	r.refundsSettled(t, id, 20, 2*time.Minute)
	if n := r.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1`, id); n != 20 {
		t.Fatalf("%d refund requests recorded, want 20", n)
	}
	requests, _, outside := r.providerRefunds(t, id)
	if requests+outside > 1299 || requests+outside < 1299-99 {
		t.Fatalf("refunded %d by requests and %d outside of 1299: want as much as fits, never more", requests, outside)
	}
	r.refundLedger(t, "refunds: 20 over both ingresses and a dashboard", id, order.StatusPartiallyRefunded)
}

// Ten refund requests of 100 (five by HTTP, five by Kafka) while the customer
// cancels the order inside its window, once two of them are reserved: the cancel refunds what is left when it
// reserves, the requests what fits before it, and the provider never gives back
// more than was charged: exactly 1299 in all, the order CANCELLED.
func TestChaosCancelRacesRefunds(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.apiEnv = map[string]string{"CANCEL_WINDOW": "10m"}
	r.startWorker(t, nil)
	r.startAPI(t)
	status, id := r.postBody(t, "cancelled-refunded", refundableJSON)
	if status != 202 {
		t.Fatalf("POST: %d", status)
	}
	r.waitStatus(t, id, order.StatusPaid, time.Minute)
	w := r.writer()
	defer w.Close()
	var wg sync.WaitGroup
	var accepted atomic.Int64 // the HTTP requests taken; one after the cancel is refused, 409
	for i := range 5 {
		wg.Go(func() {
			switch code, body := r.requestRefund(t, id, fmt.Sprintf("racing-%d", i), 100); code {
			case 202, 201:
				accepted.Add(1)
			case http.StatusConflict:
			default:
				t.Errorf("racing-%d: %d %s", i, code, body)
			}
		})
		wg.Go(func() { r.produceRefund(t, w, fmt.Sprintf("racing-event-%d", i), id, 100) })
	}
	// The cancel goes once two refunds hold their reservation, while the others
	// are on their way.
	stacktest.Eventually(t, time.Minute, "two refunds reserved", func() bool {
		return r.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1 AND amount IS NOT NULL`, id) >= 2
	})
	if code := r.cancel(t, id); code != 200 && code != 202 {
		t.Errorf("cancel: %d", code)
	}
	wg.Wait()
	r.waitStatus(t, id, order.StatusCancelled, 2*time.Minute)
	r.refundsSettled(t, id, 5+int(accepted.Load()), 2*time.Minute)
	requests, cancels, outside := r.providerRefunds(t, id)
	if requests+cancels+outside != 1299 || outside != 0 {
		t.Fatalf("the provider refunded %d by requests, %d by the cancel, %d by others: want 1299 in all", requests, cancels, outside)
	}
	r.refundLedger(t, "refunds: a cancel racing ten refund requests", id, order.StatusCancelled)
}

// A refund of an order that charged nothing is refused at once over HTTP, and
// fails over Kafka; nothing is sent to the provider either way.
func TestChaosRefundOfAnOrderNotPaid(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	status, id := r.postBody(t, "declined", strings.Replace(refundableJSON, "pm_card_visa", "pm_card_chargeDeclined", 1))
	if status != 202 {
		t.Fatalf("POST: %d", status)
	}
	r.waitStatus(t, id, order.StatusPaymentDeclined, time.Minute)
	code, body := r.requestRefund(t, id, "refund-declined", 100)
	if code != http.StatusConflict || !strings.Contains(string(body), "order-not-refundable") {
		t.Fatalf("refund of a declined order: %d %s, want 409 order-not-refundable", code, body)
	}
	if code, _ := r.requestRefund(t, "ord_nosuchorder", "refund-missing", 100); code != http.StatusNotFound {
		t.Fatalf("refund of no order: %d, want 404", code)
	}
	w := r.writer()
	defer w.Close()
	r.produceRefund(t, w, "refund-declined-event", id, 100)
	r.refundsSettled(t, id, 1, time.Minute)
	var st refund.Status
	var failure string
	if err := r.Pool.QueryRow(context.Background(), `SELECT status, COALESCE(failure, '') FROM refunds WHERE order_id = $1`, id).Scan(&st, &failure); err != nil {
		t.Fatal(err)
	}
	if st != refund.StatusFailed || !strings.Contains(failure, "order_not_refundable") {
		t.Fatalf("the event's refund: %s %q, want FAILED order_not_refundable", st, failure)
	}
	if n := len(r.Sim.Refunds()); n != 0 {
		t.Fatalf("%d refunds sent to the provider", n)
	}
	r.settledLedger(t, "refunds: of a declined order", id, order.StatusPaymentDeclined, 0)
}

// The provider answers a refund 500 and saves it for the key (it had not acted),
// then drops the answer of the next one after acting: each refund is settled by
// a consistent read of the intent's refunds, once.
func TestChaosRefundAnswersLost(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	id := r.paidOrder(t, "refund-faults")
	r.Sim.SetFaults(sandbox.Faults{Only: "refund", FailBefore: 1})
	if code, body := r.requestRefund(t, id, "refund-saved-500", 300); code != 202 {
		t.Fatalf("refund: %d %s", code, body)
	}
	r.refundsSettled(t, id, 1, 2*time.Minute)
	r.Sim.SetFaults(sandbox.Faults{Only: "refund", DropAfter: 1})
	if code, body := r.requestRefund(t, id, "refund-dropped", 200); code != 202 {
		t.Fatalf("refund: %d %s", code, body)
	}
	r.refundsSettled(t, id, 2, 2*time.Minute)
	if n := r.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1 AND status = 'SUCCEEDED'`, id); n != 2 {
		t.Fatalf("%d refunds succeeded, want 2", n)
	}
	r.refundLedger(t, "refunds: a saved 500, then an answer dropped", id, order.StatusPartiallyRefunded)
}

// The worker is killed (SIGKILL) while the provider refunds slowly; a new worker
// finishes the refund with the same key: one refund at the provider.
func TestChaosWorkerKilledMidRefund(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	w := r.startWorker(t, map[string]string{"PAYMENTS_TIMEOUT": "30s"})
	r.startAPI(t)
	id := r.paidOrder(t, "refund-killed")
	r.Sim.SetFaults(sandbox.Faults{Only: "refund", LatencyMS: 5000, Slow: 1})
	if code, body := r.requestRefund(t, id, "refund-killed", 0); code != 202 {
		t.Fatalf("refund: %d %s", code, body)
	}
	stacktest.Eventually(t, time.Minute, "the refund to be at the provider", func() bool { return r.Sim.InFlight() == 1 })
	w.Kill(t)
	r.startWorker(t, map[string]string{"PAYMENTS_TIMEOUT": "30s"})
	r.refundsSettled(t, id, 1, 2*time.Minute)
	if requests, _, _ := r.providerRefunds(t, id); requests != 1299 {
		t.Fatalf("refunded %d by the request, want the whole 1299 once", requests)
	}
	r.refundLedger(t, "refunds: worker killed mid-refund", id, order.StatusRefunded)
}

// An operator resets a refund's workflow to its first task after it succeeded:
// the new run finds its refund and sends nothing new to the provider.
func TestChaosRefundWorkflowReset(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	id := r.paidOrder(t, "refund-reset")
	code, body := r.requestRefund(t, id, "refund-reset", 500)
	if code != 202 {
		t.Fatalf("refund: %d %s", code, body)
	}
	r.refundsSettled(t, id, 1, time.Minute)
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	wf := refund.WorkflowID(r.tenant, "http", "refund-reset")
	if err := r.Temporal.GetWorkflow(context.Background(), wf, "").Get(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	before := len(r.Sim.Refunds())
	r.operator(t, "workflow", "reset", "--workflow-id", wf, "--type", "FirstWorkflowTask", "--reason", "operator")
	stacktest.Eventually(t, time.Minute, "the reset run to close", func() bool { return stacktest.Runs(t, r.Temporal, wf) == 2 })
	if err := r.Temporal.GetWorkflow(context.Background(), wf, "").Get(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if after := len(r.Sim.Refunds()); after != before {
		t.Fatalf("%d refunds at the provider after the reset, %d before", after, before)
	}
	r.refundLedger(t, "refunds: a refund's workflow reset", id, order.StatusPartiallyRefunded)
}
