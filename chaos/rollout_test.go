//go:build chaos

package chaos

import (
	"context"
	"fmt"
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
	oldWorker := stacktest.BinaryAt(t, preLocalStoreSteps, "cmd/worker")
	r := newRig(t)
	const n = 8
	r.Sim.SetFaults(sandbox.Faults{LatencyMS: 5000, Slow: n})
	old := stacktest.Start(t, oldWorker, r.workerEnv(nil))
	waitHTTP(t, "http://"+r.opsAddr+"/healthz")
	r.startAPI(t)
	var ids []string
	for i := range n {
		key := fmt.Sprintf("rollout-old-%d", i)
		r.order(t, key)
		ids = append(ids, order.WorkflowID(r.tenant, order.FromHTTP, key))
	}
	stacktest.Eventually(t, 30*time.Second, "every charge in flight on the old worker", func() bool { return r.Sim.InFlight() == n })

	old.Signal(syscall.SIGTERM)
	if code := old.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("old worker exited %d on SIGTERM, want 0", code)
	}
	if paid := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1 AND status = 'PAID'`, r.tenant); paid != 0 {
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
