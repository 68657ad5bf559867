package worker

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/tenants/fairness"
	"github.com/orderflow/orderflow/workflows"
)

// Reconciler is the activity that runs a reconcile pass (workflows.Reconcile).
type Reconciler struct {
	r *reconcile.Reconciler
}

// NewReconciler wraps a reconciler as the worker's activity.
func NewReconciler(r *reconcile.Reconciler) *Reconciler { return &Reconciler{r: r} }

// Reconcile runs one pass, heartbeating while it runs (one list may take many
// paced pages).
func (a *Reconciler) Reconcile(ctx context.Context) (reconcile.Report, error) {
	defer activities.Heartbeat(ctx)()
	return a.r.Pass(ctx)
}

// Engine is Temporal as the reconciler sees it: whether an order's workflow runs,
// and the recovery run of one that does not.
type Engine struct {
	c         client.Client
	dc        converter.DataConverter // the client's, to read a workflow's input
	namespace string
	taskQueue string
	fair      fairness.Weights
	policy    workflows.Policy
}

// NewEngine returns the engine of the client's namespace that starts recovery
// runs on taskQueue with policy, each with its tenant as fairness key; dc is the
// client's data converter.
func NewEngine(c client.Client, dc converter.DataConverter, namespace, taskQueue string, fair fairness.Weights, policy workflows.Policy) *Engine {
	return &Engine{c: c, dc: dc, namespace: namespace, taskQueue: taskQueue, fair: fair, policy: policy}
}

// Running reports whether the workflow's latest run is open; a workflow Temporal
// no longer has (past its retention) is not.
func (e *Engine) Running(ctx context.Context, workflowID string) (bool, error) {
	d, err := e.c.DescribeWorkflow(ctx, workflowID, "")
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		return false, nil
	case err != nil:
		return false, err
	}
	return d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// Recover starts workflows.Order for the order with Resume.Recover under the
// order's workflow ID, reusing it: the API and the cancel update reach the new
// run. A run started meanwhile by another pass is left to finish.
func (e *Engine) Recover(ctx context.Context, o orderstore.Unsettled, intentID string) error {
	in := workflows.PlaceOrder{Order: o.Order(), Policy: e.policy, Resume: &workflows.Resume{
		Recover: true, Result: workflows.OrderResult{OrderID: o.ID, Status: o.Status, IntentID: intentID},
	}}
	_, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: o.WorkflowID, TaskQueue: e.taskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Priority:                                 e.fair.Priority(o.Tenant),
		TypedSearchAttributes:                    workflows.StartSearchAttributes(o.WorkflowID, o.Tenant, o.Status),
	}, workflows.Order, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start the recovery of %s: %w", o.WorkflowID, err)
	}
	return nil
}

// Follow starts workflows.FollowPayment for a paid order, once per trigger.
func (e *Engine) Follow(ctx context.Context, o order.Order, intentID, trigger string) error {
	return workflows.StartFollow(ctx, e.c, e.taskQueue, e.fair, o, intentID, trigger)
}
