//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/sandbox"
	"github.com/orderflow/orderflow/internal/stacktest"
)

// preLocalStoreSteps is the last commit before OrderWorkflow's versioned change
// local-store-steps: its worker records the order and its transitions as regular
// activities.
const preLocalStoreSteps = "24fdf35"

// steps counts what a run's history holds: "activity:<type>" for each activity
// scheduled on the server, "marker:<name>" for each marker (a local activity's
// result, a GetVersion decision).
func (r *rig) steps(t *testing.T, workflowID string) map[string]int {
	t.Helper()
	it := r.Temporal.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	out := map[string]int{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", workflowID, err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			out["activity:"+a.GetActivityType().GetName()]++
		}
		if m := e.GetMarkerRecordedEventAttributes(); m != nil {
			out["marker:"+m.GetMarkerName()]++
		}
	}
	return out
}

// TestRolloutOldRunsFinishOnNewCode deploys a change of OrderWorkflow as a rolling
// update does. Orders start on a worker built from the commit before the change;
// with their charges in flight, that worker drains on SIGTERM and exits; a worker
// built from this tree takes over. The old runs finish on the new code along their
// old path (the store steps stay regular activities), with one charge each, and a
// run started after the deploy takes the new path (local activities).
func TestRolloutOldRunsFinishOnNewCode(t *testing.T) {
	t.Parallel()
	oldWorker := stacktest.BinaryAt(t, preLocalStoreSteps, "cmd/worker")
	r := newRig(t)
	const n = 8
	// Slow enough that the n charges, placed one after another, are all in flight
	// at once even on a machine so busy that placing them takes over 12 s; the
	// worker's stop hands them back after 5 s, so the hold costs the row little.
	r.Sim.SetFaults(sandbox.Faults{LatencyMS: 30000, Slow: n})
	old := stacktest.Start(t, oldWorker, r.workerEnv(nil))
	waitHTTP(t, "http://"+r.opsAddr+"/healthz")
	// The API of the same commit: this tree's starts workflows.Order, which that
	// worker does not run (workers roll out before the API).
	r.startAPIBinary(t, stacktest.BinaryAt(t, preLocalStoreSteps, "cmd/api"), r.apiAddr, r.apiOpsAddr, "0s")
	var ids []string
	for i := range n {
		key := fmt.Sprintf("rollout-old-%d", i)
		r.order(t, key)
		ids = append(ids, order.WorkflowID(r.tenant, order.FromHTTP, key))
	}
	stacktest.Eventually(t, 90*time.Second, "every charge in flight on the old worker", func() bool { return r.Sim.InFlight() == n })

	old.Signal(syscall.SIGTERM)
	if code := old.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("old worker exited %d on SIGTERM, want 0", code)
	}
	if paid := r.paidOf(t, r.tenant); paid != 0 {
		t.Fatalf("%d orders were paid before the new worker started: the old worker finished them itself", paid)
	}
	for _, id := range ids {
		if s := r.steps(t, id); s["activity:RecordOrder"] != 1 || s["marker:LocalActivity"] != 0 {
			t.Fatalf("%s did not start on the old code: %v", id, s)
		}
	}

	r.startWorker(t, nil)
	newKey := "rollout-new"
	r.order(t, newKey)
	r.ledger(t, fmt.Sprintf("rollout: %d runs of the old worker finished by the new one", n))

	for _, id := range ids {
		if s := r.steps(t, id); s["activity:Transition"] == 0 || s["marker:LocalActivity"] != 0 {
			t.Errorf("%s left its old path on the new code: %v", id, s)
		}
	}
	if s := r.steps(t, order.WorkflowID(r.tenant, order.FromHTTP, newKey)); s["activity:RecordOrder"] != 0 || s["marker:LocalActivity"] == 0 {
		t.Errorf("a run started after the deploy did not take the new path: %v", s)
	}
}

// beforeFreeze is the last commit whose API started new orders on OrderWorkflow,
// the workflow workflows/orderv1 now freezes.
const beforeFreeze = "d813aa0"

// TestRolloutOrdersFinishOnTheFrozenWorkflow deploys the freeze as a rolling update
// does: orders start on the worker and API of the commit before it (their charges
// in flight, one waiting on its customer's 3-D Secure, one paid inside its cancel
// window); both drain on SIGTERM, and this tree's worker and API take over. The old
// runs finish on orderv1.OrderWorkflow, a new order runs workflows.Order, and every
// order nets what its status says, at the provider and in the ledger.
func TestRolloutOrdersFinishOnTheFrozenWorkflow(t *testing.T) {
	t.Parallel()
	oldWorker := stacktest.BinaryAt(t, beforeFreeze, "cmd/worker")
	oldAPI := stacktest.BinaryAt(t, beforeFreeze, "cmd/api")
	r := newRig(t)
	r.apiEnv = map[string]string{"CANCEL_WINDOW": "10m", "PAYMENTS_URL": r.SimURL, "PAYMENT_POLL_INTERVAL": "1s"}
	old := stacktest.Start(t, oldWorker, r.workerEnv(nil))
	waitHTTP(t, "http://"+r.opsAddr+"/healthz")
	api := r.startAPIBinary(t, oldAPI, r.apiAddr, r.apiOpsAddr, "0s")

	status, window := r.postBody(t, "rollout-window", orderJSON)
	if status != 202 {
		t.Fatalf("POST: %d", status)
	}
	r.statusAt(t, window, order.StatusPaid, time.Minute)
	threeDS, intentID := r.awaitCustomer(t, "rollout-3ds")
	const n = 4
	// Slow enough that the n confirms, placed one after another, are all in flight
	// at once even on a machine so busy that placing them takes over 12 s; the
	// worker's stop hands them back after 5 s, so the hold costs the row little.
	r.Sim.SetFaults(sandbox.Faults{Only: "confirm", LatencyMS: 30000, Slow: n})
	var inFlight []string
	for i := range n {
		key := fmt.Sprintf("rollout-frozen-%d", i)
		r.order(t, key)
		inFlight = append(inFlight, order.WorkflowID(r.tenant, order.FromHTTP, key))
	}
	stacktest.Eventually(t, 90*time.Second, "every confirm in flight on the old worker", func() bool { return r.Sim.InFlight() == n })

	old.Signal(syscall.SIGTERM)
	api.Signal(syscall.SIGTERM)
	if code := old.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("old worker exited %d on SIGTERM, want 0", code)
	}
	api.Wait(t, 30*time.Second)
	r.startWorker(t, nil)
	r.startAPI(t)

	r.customerActs(t, intentID, "complete")
	r.statusAt(t, threeDS, order.StatusPaid, time.Minute)
	if code := r.cancel(t, window); code != 200 {
		t.Fatalf("cancel of the order in its window after the deploy: %d", code)
	}
	r.statusAt(t, window, order.StatusCancelled, time.Minute)
	r.order(t, "rollout-new")
	newID := order.WorkflowID(r.tenant, order.FromHTTP, "rollout-new")
	paid := append([]string{newID, order.WorkflowID(r.tenant, order.FromHTTP, "rollout-3ds")}, inFlight...)
	for _, id := range paid {
		r.statusAt(t, order.IDFor(id), order.StatusPaid, time.Minute)
	}

	windowID := order.WorkflowID(r.tenant, order.FromHTTP, "rollout-window")
	for _, id := range append(paid, windowID) {
		want, wantNet := "OrderWorkflow", int64(500)
		switch id {
		case newID:
			want = "Order"
		case windowID:
			wantNet = 0
		}
		if got := r.workflowType(t, id); got != want {
			t.Errorf("%s ran %s, want %s", id, got, want)
		}
		charges := r.Sim.ChargesForOrder(order.IDFor(id))
		var net int64
		for _, c := range charges {
			net += c.Amount - c.AmountRefunded
		}
		if len(charges) != 1 || net != wantNet {
			t.Errorf("%s: %d charges netting %d at the provider, want 1 netting %d", id, len(charges), net, wantNet)
		}
	}
	balanced, pending := r.payments(t)
	line := fmt.Sprintf("%-44s orders=%d balanced=%d pending-payments=%d charges=%d refunds=%d",
		"rollout: the freeze, mid-flight", len(paid)+1, balanced, pending, len(r.Sim.Charges("")), len(r.Sim.Refunds()))
	t.Log(line)
	appendSummary(line)
	if balanced != len(paid)+1 || pending != 0 || len(r.Sim.Charges("")) != len(paid)+1 || len(r.Sim.Refunds()) != 1 {
		t.Fatalf("ledger does not balance: %s", line)
	}
}

// workflowType is the type of the workflow's first run.
func (r *rig) workflowType(t *testing.T, workflowID string) string {
	t.Helper()
	d, err := r.Temporal.DescribeWorkflow(context.Background(), workflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	return d.RawResponse.GetWorkflowExecutionInfo().GetType().GetName()
}

// cancel asks the API to cancel one of the rig's orders and returns the status.
func (r *rig) cancel(t *testing.T, orderID string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.apiAddr+"/v1/orders/"+orderID+"/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+r.apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
