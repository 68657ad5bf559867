package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/sandbox"
	"github.com/orderflow/orderflow/internal/stacktest"
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
	id := "order:" + h.tenant + ":" + key
	return id, workflows.PlaceOrder{Order: order.Order{
		ID: order.IDFor(id), Tenant: h.tenant, WorkflowID: id, CustomerID: "cus_1", Currency: "USD",
		Items: []order.Item{{SKU: "sku-1", Quantity: 2, UnitAmount: 1299}}, Amount: 2598, PaymentMethod: paymentMethod,
	}}
}

func (h *harness) execute(t *testing.T, ctx context.Context, id string, in workflows.PlaceOrder) client.WorkflowRun {
	t.Helper()
	run, err := h.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: h.Queue}, workflows.OrderWorkflow, in)
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
	for _, m := range stacktest.Messages(t, h.Topic, want) {
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
	if status != string(order.StatusPaid) || ref != res.ChargeID {
		t.Fatalf("orders row: %s %s, want PAID %s", status, ref, res.ChargeID)
	}
	key := order.PaymentKey(id, "charge")
	if n := h.count(t, `SELECT count(*) FROM payments WHERE idempotency_key = $1 AND status = 'succeeded' AND provider_id = $2`, key, res.ChargeID); n != 1 {
		t.Fatalf("payments rows = %d", n)
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
	if n := h.Sim.Requests(order.PaymentKey(id, "charge")); n != 1 {
		t.Fatalf("charge requests = %d, want 1 (a decline is not retried)", n)
	}
	if evs := h.events(t, 1); evs[0].Type != activities.EventOrderPaymentDeclined {
		t.Fatalf("event = %+v", evs[0])
	}
}

// The provider charges, then the answer is lost. The retry with the same key gets
// the stored answer: one charge, order PAID.
func TestChargedThenAnswerLostChargesOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults sandbox.Faults
	}{
		{"500", sandbox.Faults{FailAfter: 2}},
		{"dropped connection", sandbox.Faults{DropAfter: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.Sim.SetFaults(tc.faults)
			h.StartWorker(t)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			id, in := h.placeOrder("lost-answer", "pm_card_visa")
			var res workflows.OrderResult
			if err := h.execute(t, ctx, id, in).Get(ctx, &res); err != nil {
				t.Fatal(err)
			}
			key := order.PaymentKey(id, "charge")
			attempts, charges := h.Sim.Requests(key), len(h.Sim.Charges(key))
			t.Logf("fault %s: %d attempts, %d charge(s)", tc.name, attempts, charges)
			if res.Status != order.StatusPaid || charges != 1 || attempts < 2 {
				t.Fatalf("status %s, %d charges after %d attempts: want PAID, 1 charge, >= 2 attempts", res.Status, charges, attempts)
			}
			if status, ref := h.orderRow(t, in.Order.ID); status != "PAID" || ref != h.Sim.Charges(key)[0].ID {
				t.Fatalf("orders row %s %s", status, ref)
			}
		})
	}
}

// The worker process is killed with SIGKILL while the provider is charging. The
// provider finishes the charge; a new worker retries with the same key and gets it.
func TestWorkerKilledDuringChargeChargesOnce(t *testing.T) {
	h := newHarness(t)
	h.Sim.SetFaults(sandbox.Faults{LatencyMS: 3000})
	first := h.StartWorkerProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	id, in := h.placeOrder("sigkill", "pm_card_visa")
	key := order.PaymentKey(id, "charge")
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
