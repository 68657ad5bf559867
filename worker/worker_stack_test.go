//go:build stack

package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/workertest"
	"github.com/orderflow/orderflow/workflows"
)

// harness is the order pipeline on the real stack plus a tenant of its own.
type harness struct {
	*workertest.Orders
	tenant string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return &harness{Orders: workertest.NewOrders(t), tenant: stacktest.Name("tenant")}
}

func (h *harness) placeOrder(key, paymentMethod string) (string, workflows.PlaceOrder) {
	id := order.WorkflowID(h.tenant, order.FromHTTP, key)
	return id, workflows.PlaceOrder{Order: order.Order{
		ID: order.IDFor(id), Tenant: h.tenant, WorkflowID: id, CustomerID: "cus_1", Currency: "USD",
		Items: []order.Item{{SKU: "sku-1", Quantity: 2, UnitAmount: 1299}}, Amount: 2598, PaymentMethod: paymentMethod,
	}, Policy: workflows.Policy{LookupDelay: workertest.LookupDelay}}
}

// netCharged is what the payments ledger says the order's card was charged, net of
// refunds, and how many of its rows are still pending.
func (h *harness) netCharged(t *testing.T, orderID string) (net int64, pending int) {
	t.Helper()
	if err := h.Pool.QueryRow(context.Background(), `
		SELECT COALESCE(sum(CASE kind WHEN 'charge' THEN amount ELSE -amount END) FILTER (WHERE status = 'succeeded'), 0),
		       count(*) FILTER (WHERE status = 'pending')
		FROM payments WHERE order_id = $1`, orderID).Scan(&net, &pending); err != nil {
		t.Fatal(err)
	}
	return net, pending
}

func (h *harness) execute(t *testing.T, ctx context.Context, id string, in workflows.PlaceOrder) client.WorkflowRun {
	t.Helper()
	run, err := h.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: h.Queue}, workflows.Order, in)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func (h *harness) orderRow(t *testing.T, id string) (status, paymentRef string) {
	t.Helper()
	var ref *string
	if err := h.Pool.QueryRow(context.Background(), `SELECT status, payment_ref FROM orders WHERE id = $1`, id).Scan(&status, &ref); err != nil {
		t.Fatalf("order row %s: %v", id, err)
	}
	if ref != nil {
		paymentRef = *ref
	}
	return status, paymentRef
}

func (h *harness) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := h.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// events reads the first want events of the harness topic (one partition).
func (h *harness) events(t *testing.T, want int) []activities.Event {
	t.Helper()
	var out []activities.Event
	contract := stacktest.Contract(t)
	for _, m := range stacktest.Messages(t, h.Topic, want) {
		if err := contract.CheckEvent(m); err != nil {
			t.Error(err)
		}
		var e activities.Event
		if err := json.Unmarshal(m.Value, &e); err != nil {
			t.Fatalf("event %s: %v", m.Value, err)
		}
		if hdr := stacktest.Header(m, "eventId"); hdr != e.EventID {
			t.Fatalf("eventId header %q != value %q", hdr, e.EventID)
		}
		if string(m.Key) != e.OrderID {
			t.Fatalf("message key %q, want order ID %q", m.Key, e.OrderID)
		}
		out = append(out, e)
	}
	return out
}

func TestOrderRunsToPaidOnTheRealStack(t *testing.T) {
	h := newHarness(t)
	h.StartWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	id, in := h.placeOrder("happy", "pm_card_visa")
	var res workflows.OrderResult
	if err := h.execute(t, ctx, id, in).Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != order.StatusPaid || !res.Fulfilled {
		t.Fatalf("result = %+v", res)
	}
	status, ref := h.orderRow(t, in.Order.ID)
	if status != string(order.StatusPaid) || ref != res.IntentID || !strings.HasPrefix(ref, "pi_") {
		t.Fatalf("orders row: %s %s, want PAID %s", status, ref, res.IntentID)
	}
	// The intent was recorded before its confirm, which recorded the charge.
	created := h.count(t, `SELECT count(*) FROM payments WHERE idempotency_key = $1 AND kind = 'intent' AND status = 'created' AND provider_id = $2`,
		order.PaymentKey(id, "intent", 0), res.IntentID)
	key := order.PaymentKey(id, "confirm", 0)
	confirmed := h.count(t, `SELECT count(*) FROM payments WHERE idempotency_key = $1 AND status = 'succeeded' AND provider_id = $2 AND intent_id = $3`,
		key, res.ChargeID, res.IntentID)
	if created != 1 || confirmed != 1 {
		t.Fatalf("payments rows: %d intent, %d confirmed charge; want 1 and 1", created, confirmed)
	}
	if n := len(h.Sim.Charges(key)); n != 1 {
		t.Fatalf("sandbox charges for %s = %d", key, n)
	}
	evs := h.events(t, 1)
	if evs[0].Type != activities.EventOrderPaid || evs[0].OrderID != in.Order.ID || evs[0].EventID != order.EventID(id, activities.EventOrderPaid) {
		t.Fatalf("event = %+v", evs[0])
	}
}

func TestDeclinedOnTheRealStack(t *testing.T) {
	h := newHarness(t)
	h.StartWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, in := h.placeOrder("declined", "pm_card_chargeDeclined")
	var res workflows.OrderResult
	if err := h.execute(t, ctx, id, in).Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != order.StatusPaymentDeclined {
		t.Fatalf("status = %s", res.Status)
	}
	if status, _ := h.orderRow(t, in.Order.ID); status != string(order.StatusPaymentDeclined) {
		t.Fatalf("orders row status = %s", status)
	}
	if n := h.Sim.Requests(order.PaymentKey(id, "confirm", 0)); n != 1 {
		t.Fatalf("confirm requests = %d, want 1 (a decline is not retried)", n)
	}
	if evs := h.events(t, 1); evs[0].Type != activities.EventOrderPaymentDeclined {
		t.Fatalf("event = %+v", evs[0])
	}
}

// The provider's answer is lost or refused in the ways a real provider loses it.
// Like Stripe, the sandbox saves a 500 and replays it to every retry of the key, so
// only reading the intent can tell whether the card was charged; the order never
// ends FAILED on a guess, and the card is charged once. A creation whose answer is
// lost leaves an intent that is never confirmed, and is swept.
func TestUnknownOutcomesAreReconciled(t *testing.T) {
	t.Parallel() // its own tenants, task queue and sandbox: it runs beside the package's other slow tests
	for _, tc := range []struct {
		name     string
		faults   sandbox.Faults
		keysUsed int // confirm keys that reached the provider
		intents  int // intents created for the order
	}{
		{"charged, then a saved 500", sandbox.Faults{Only: "confirm", FailAfter: 1}, 1, 1},
		{"a saved 500 without charging", sandbox.Faults{Only: "confirm", FailBefore: 1}, 2, 1},
		{"charged, then the connection dropped", sandbox.Faults{Only: "confirm", DropAfter: 1}, 1, 1},
		{"intent created, then a saved 500", sandbox.Faults{Only: "create", FailAfter: 1}, 1, 2},
		{"a saved 500 before the intent was created", sandbox.Faults{Only: "create", FailBefore: 1}, 1, 1},
		{"intent created, then the connection dropped", sandbox.Faults{Only: "create", DropAfter: 1}, 1, 1},
		{"a proxy's 503, not saved", sandbox.Faults{Unavailable: 2}, 1, 1},
		{"credentials refused for 10 s", sandbox.Faults{UnauthorizedMS: 10000}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.Sim.SetFaults(tc.faults)
			h.StartWorker(t)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			id, in := h.placeOrder(stacktest.Name("k"), "pm_card_visa")
			var res workflows.OrderResult
			if err := h.execute(t, ctx, id, in).Get(ctx, &res); err != nil {
				t.Fatal(err)
			}
			charges := h.Sim.ChargesForOrder(in.Order.ID)
			used := 0
			for gen := range 4 {
				if h.Sim.Requests(order.PaymentKey(id, "confirm", gen)) > 0 {
					used++
				}
			}
			intents := h.Sim.Intents(in.Order.ID)
			net, pending := h.netCharged(t, in.Order.ID)
			t.Logf("%s: %s, %d charge(s), %d confirm key(s) used, %d intent(s), ledger net %d", tc.name, res.Status, len(charges), used, len(intents), net)
			if res.Status != order.StatusPaid || len(charges) != 1 || res.ChargeID != charges[0].ID || used != tc.keysUsed || len(intents) != tc.intents {
				t.Fatalf("status %s, charges %+v (workflow has %s), %d keys used, %d intents: want PAID, 1 charge, %d key(s), %d intent(s)",
					res.Status, charges, res.ChargeID, used, len(intents), tc.keysUsed, tc.intents)
			}
			for _, pi := range intents {
				if pi.ID != res.IntentID && pi.Status != "canceled" {
					t.Fatalf("orphan intent %s is %s, want canceled by the sweep", pi.ID, pi.Status)
				}
			}
			if status, ref := h.orderRow(t, in.Order.ID); status != "PAID" || ref != res.IntentID {
				t.Fatalf("orders row %s %s", status, ref)
			}
			if net != in.Order.Amount || pending != 0 {
				t.Fatalf("payments ledger: net %d with %d pending rows, want %d and 0", net, pending, in.Order.Amount)
			}
		})
	}
}

// A client key of 255 characters full of ':' and '%' (each percent-encoded into the
// workflow ID) still gives a provider key the provider accepts.
func TestLongestClientKeyIsCharged(t *testing.T) {
	h := newHarness(t)
	h.StartWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key := strings.Repeat(":%", 127) + "k"
	id, in := h.placeOrder(key, "pm_card_visa")
	var res workflows.OrderResult
	if err := h.execute(t, ctx, id, in).Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if n := len(h.Sim.ChargesForOrder(in.Order.ID)); res.Status != order.StatusPaid || n != 1 || len(id) < 700 {
		t.Fatalf("a %d-character workflow ID: %s with %d charges, want PAID with 1", len(id), res.Status, n)
	}
}

// The worker process is killed with SIGKILL while the provider is charging. The
// provider finishes the charge; a new worker retries with the same key and gets it.
func TestWorkerKilledDuringChargeChargesOnce(t *testing.T) {
	h := newHarness(t)
	h.Sim.SetFaults(sandbox.Faults{Only: "confirm", LatencyMS: 3000})
	first := h.StartWorkerProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	id, in := h.placeOrder("sigkill", "pm_card_visa")
	key := order.PaymentKey(id, "confirm", 0)
	run := h.execute(t, ctx, id, in)

	stacktest.Eventually(t, 30*time.Second, "the charge to be in flight", func() bool { return h.Sim.InFlight() == 1 })
	first.Kill(t)
	if status, _ := h.orderRow(t, in.Order.ID); status != string(order.StatusPaymentPending) {
		t.Fatalf("order status while the charge is unknown = %s, want PAYMENT_PENDING", status)
	}
	stacktest.Eventually(t, 10*time.Second, "the provider to finish the charge", func() bool { return len(h.Sim.Charges(key)) == 1 })
	h.Sim.SetFaults(sandbox.Faults{})

	h.StartWorkerProcess(t)
	var res workflows.OrderResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	attempts, charges := h.Sim.Requests(key), len(h.Sim.Charges(key))
	t.Logf("worker SIGKILL during charge: %d attempts, %d charge(s)", attempts, charges)
	if res.Status != order.StatusPaid || charges != 1 || attempts != 2 {
		t.Fatalf("status %s, %d charges after %d attempts: want PAID, 1 charge, 2 attempts", res.Status, charges, attempts)
	}
	if res.ChargeID != h.Sim.Charges(key)[0].ID {
		t.Fatalf("workflow charge %s, provider charge %s", res.ChargeID, h.Sim.Charges(key)[0].ID)
	}
	if n := h.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, h.tenant); n != 1 {
		t.Fatalf("orders for the tenant = %d", n)
	}
}
