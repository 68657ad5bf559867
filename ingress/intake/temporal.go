package intake

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/workflows"
)

// Temporal is Workflows on a Temporal client: OrderWorkflow started so that a
// duplicate start lands on the existing workflow, running or closed, and the
// workflow's cancel update.
type Temporal struct {
	c         client.Client
	taskQueue string
	policy    workflows.Policy
}

var _ Workflows = (*Temporal)(nil)

// NewTemporal returns the workflows of the task queue, started with policy.
func NewTemporal(c client.Client, taskQueue string, policy workflows.Policy) *Temporal {
	return &Temporal{c: c, taskQueue: taskQueue, policy: policy}
}

// Start starts (or finds) the order's workflow and returns its run.
func (t *Temporal) Start(ctx context.Context, o order.Order) (Run, error) {
	run, err := t.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        o.WorkflowID,
		TaskQueue: t.taskQueue,
		// A running workflow absorbs the duplicate...
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// ...and so does a closed one: its ID can never start a second run.
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: false,
	}, workflows.OrderWorkflow, workflows.PlaceOrder{Order: o, Policy: t.policy})
	if err != nil {
		return nil, fmt.Errorf("start workflow %s: %w", o.WorkflowID, err)
	}
	return run, nil
}

// StartNew starts the order's workflow; created is false when the ID exists, running
// or closed (and still retained).
func (t *Temporal) StartNew(ctx context.Context, o order.Order) (bool, error) {
	_, err := t.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       o.WorkflowID,
		TaskQueue:                                t.taskQueue,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, workflows.OrderWorkflow, workflows.PlaceOrder{Order: o, Policy: t.policy})
	var exists *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &exists):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("start workflow %s: %w", o.WorkflowID, err)
	}
	return true, nil
}

// Cancel sends the cancel update and waits for the order to settle. A workflow that
// refuses it, or has closed, is errNotCancellable.
func (t *Temporal) Cancel(ctx context.Context, workflowID string) (order.Status, error) {
	h, err := t.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflowID, UpdateName: workflows.UpdateCancel, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var res workflows.OrderResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	var appErr *temporal.ApplicationError
	var notFound *serviceerror.NotFound
	switch {
	case err == nil:
		return res.Status, nil
	case errors.As(err, &appErr) && appErr.Type() == workflows.ErrNotCancellable,
		errors.As(err, &notFound): // the workflow has closed
		return "", errNotCancellable
	}
	return "", fmt.Errorf("cancel update of %s: %w", workflowID, err)
}
