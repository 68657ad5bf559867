//go:build stack

package worker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/workflows"
)

// refund runs a refund request of amount of o to its end.
func (h *harness) refund(t *testing.T, ctx context.Context, o order.Order, key string, amount int64) (string, workflows.RefundResult) {
	t.Helper()
	wf := refund.WorkflowID(h.tenant, identity.FromHTTP, key)
	r := refund.Refund{ID: refund.IDFor(wf), Tenant: h.tenant, WorkflowID: wf, OrderID: o.ID, Amount: amount}
	run, err := h.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wf, TaskQueue: h.Queue}, workflows.Refund, workflows.RefundInput{Refund: r})
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.RefundResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("refund %s: %v", key, err)
	}
	return wf, res
}

// Refund requests on the real stack: one refunds part of a paid order, which
// follows (PARTIALLY_REFUNDED); one over what is left fails; one whose first key
// meets a saved 500 before it ran refunds with the next key; a reset of the first
// to its first workflow task sends nothing new. Every event matches its contract.
// With ORDERFLOW_RECORD_HISTORIES=1 the runs' histories are written to
// workflows/testdata, where workflows' replay test guards them.
func TestRefundRequestsOnTheRealStack(t *testing.T) {
	h := newHarness(t)
	h.StartWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, in := h.placeOrder("refunded", "pm_card_visa")
	var paid workflows.OrderResult
	if err := h.execute(t, ctx, id, in).Get(ctx, &paid); err != nil || paid.Status != order.StatusPaid {
		t.Fatalf("order: %+v, %v", paid, err)
	}
	histories := map[string]*historypb.History{}

	part, res := h.refund(t, ctx, in.Order, "part", 100)
	if res.Status != refund.StatusSucceeded || res.Amount != 100 || res.ProviderRefundID == "" {
		t.Fatalf("refund of 100: %+v", res)
	}
	histories["refund_succeeded"] = history(t, ctx, h.Temporal, part)
	stacktest.Eventually(t, 30*time.Second, "the order to follow the refund", func() bool {
		status, _ := h.orderRow(t, in.Order.ID)
		return status == string(order.StatusPartiallyRefunded)
	})

	over, res := h.refund(t, ctx, in.Order, "over", 5000)
	if res.Status != refund.StatusFailed || res.Failure != activities.FailureExceeds+": 2498 left" {
		t.Fatalf("refund over what is left: %+v", res)
	}
	histories["refund_over_budget_failed"] = history(t, ctx, h.Temporal, over)

	h.Sim.SetFaults(sandbox.Faults{Only: "refund", FailBefore: 1})
	lost, res := h.refund(t, ctx, in.Order, "lost", 200)
	h.Sim.SetFaults(sandbox.Faults{})
	if res.Status != refund.StatusSucceeded || res.Amount != 200 {
		t.Fatalf("refund after a saved 500: %+v", res)
	}
	if n := len(h.Sim.Refunds()); n != 2 {
		t.Fatalf("%d refunds at the provider, want 2", n)
	}
	histories["refund_saved_500_next_key"] = history(t, ctx, h.Temporal, lost)

	h.resetToFirstTask(t, ctx, part)
	if n := len(h.Sim.Refunds()); n != 2 {
		t.Fatalf("after a reset, %d refunds at the provider, want 2", n)
	}
	var types []string
	for _, e := range h.events(t, 6) { // OrderPaid, then each refund's and each follow's
		types = append(types, e.Type)
	}
	for _, want := range []string{activities.EventRefundSucceeded, activities.EventRefundFailed, activities.EventOrderPartiallyRefunded} {
		if !slices.Contains(types, want) {
			t.Fatalf("events %v, want a %s", types, want)
		}
	}
	replayAndRecord(t, histories)
}

// resetToFirstTask resets the workflow as `temporal workflow reset --type
// FirstWorkflowTask` does and waits for the new run, which must end as the
// first did.
func (h *harness) resetToFirstTask(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	var first int64
	for _, e := range history(t, ctx, h.Temporal, id).GetEvents() {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			first = e.GetEventId()
			break
		}
	}
	reset, err := h.Temporal.ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace: "default", WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id},
		Reason: "test", WorkflowTaskFinishEventId: first, RequestId: stacktest.Name("reset"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.RefundResult
	if err := h.Temporal.GetWorkflow(ctx, id, reset.GetRunId()).Get(ctx, &res); err != nil || res.Status != refund.StatusSucceeded {
		t.Fatalf("the reset run: %+v, %v", res, err)
	}
}
