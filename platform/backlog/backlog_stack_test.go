//go:build stack

package backlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/backlog"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/workflows"
)

// Against Temporal's own visibility store: workflows started on a queue that
// closes few are the fleet's backlog (not orders waiting for their customers), and new work over the bound is refused
// with the time the fleet takes to close the excess; once they close the bound
// opens again.
func TestTheFleetsBacklogIsReadFromTemporal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc := stacktest.Temporal(t)
	queue := stacktest.Name("backlog")
	g, err := backlog.New(tc, backlog.Options{Queue: queue, Accept: 5 * time.Second, Floor: 3, AtWork: workflows.AtWork}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 5 {
		ids = append(ids, idle(t, ctx, tc, queue, ""))
	}
	// Orders waiting for their customers' 3-D Secure are no backlog.
	for range 3 {
		id := idle(t, ctx, tc, queue, order.StatusActionRequired)
		t.Cleanup(func() { terminate(t, tc, id) })
	}
	// One closes: 0.1 a second, so the bound is the floor and 4 open are over it
	// by 2 (with the one asking), 20 s of closing.
	terminate(t, tc, ids[0])
	stacktest.Eventually(t, 30*time.Second, "4 open workflows refused over a floor of 3", func() bool {
		if err := g.Refresh(ctx); err != nil {
			t.Logf("refresh: %v", err)
			return false
		}
		after, ok := g.Admit("t")
		return !ok && after == 20
	})
	for _, id := range ids[1:] {
		terminate(t, tc, id)
	}
	stacktest.Eventually(t, 30*time.Second, "work admitted once the rest closed", func() bool {
		if err := g.Refresh(ctx); err != nil {
			return false
		}
		_, ok := g.Admit("t")
		return ok
	})
}

// An order whose charge is not sent yet is backlog however long it has waited
// in the task queue; any other workflow (an order whose charge the provider is
// processing or that waits for a lookup, for its customer or in its cancel
// window, a workflow of another kind) counts only within the half-minute after
// its start. The gauge reads the counts
// a minute ahead, when every workflow here is older than that.
func TestAnOrderNotYetChargedCountsWhateverItsAge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc := stacktest.Temporal(t)
	queue := stacktest.Name("backlog-old")
	ahead := func() time.Time { return time.Now().Add(time.Minute) }
	g, err := backlog.New(tc, backlog.Options{Queue: queue, Accept: 5 * time.Second, Floor: 3, AtWork: workflows.AtWork, Working: workflows.Working}, ahead)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := g.Register(reg); err != nil {
		t.Fatal(err)
	}
	for _, s := range []order.Status{order.StatusPending, order.StatusPaymentPending, order.StatusPaymentUnknown, order.StatusPaid, order.StatusActionRequired, ""} {
		id := idle(t, ctx, tc, queue, s)
		t.Cleanup(func() { terminate(t, tc, id) })
	}
	stacktest.Eventually(t, 30*time.Second, "the six workflows visible", func() bool {
		n, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Query: fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", queue)})
		return err == nil && n.GetCount() == 6
	})
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if open := stacktest.Metric(t, stacktest.MetricsText(reg), "orderflow_fleet_open_workflows"); open != 1 {
		t.Fatalf("open workflows at work a minute after their start: %v, want the 1 order whose charge is not sent", open)
	}
}

// idle starts a workflow on a queue no worker serves, with status as its
// OrderflowStatus unless it is empty.
func idle(t *testing.T, ctx context.Context, tc client.Client, queue string, status order.Status) string {
	t.Helper()
	o := client.StartWorkflowOptions{ID: stacktest.Name("backlog-wf"), TaskQueue: queue}
	if status != "" {
		o.TypedSearchAttributes = temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(workflows.SearchStatus).ValueSet(string(status)))
	}
	run, err := tc.ExecuteWorkflow(ctx, o, "NoWorkerServesThis")
	if err != nil {
		t.Fatal(err)
	}
	return run.GetID()
}

func terminate(t *testing.T, tc client.Client, id string) {
	t.Helper()
	if err := tc.TerminateWorkflow(context.Background(), id, "", "the backlog test is done with it"); err != nil {
		t.Fatal(err)
	}
}
