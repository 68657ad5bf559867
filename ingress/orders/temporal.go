package orders

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/workflows"
)

// Temporal is Workflows on the ingress's starter: workflows.Order started so
// that a duplicate start lands on the existing workflow, running or closed, and
// the workflow's cancel update. Every order starts with its status PENDING as a
// search attribute.
type Temporal struct {
	starter intake.Starter
	policy  workflows.Policy
}

var _ Workflows = (*Temporal)(nil)

// NewTemporal returns the order workflows of the starter's task queue, started
// with policy.
func NewTemporal(starter intake.Starter, policy workflows.Policy) *Temporal {
	return &Temporal{starter: starter.With(workflows.StatusAttribute(order.StatusPending)), policy: policy}
}

// Placed returns the order the workflow runs, read from the input of its current
// run (a run continued as new carries the same order).
func (t *Temporal) Placed(ctx context.Context, workflowID string) (order.Order, error) {
	var in workflows.PlaceOrder
	err := t.starter.Input(ctx, workflowID, &in)
	return in.Order, err
}

// Start starts (or finds) the order's workflow and returns its run.
func (t *Temporal) Start(ctx context.Context, o order.Order) (intake.Run, error) {
	return t.starter.Start(ctx, o.Tenant, o.WorkflowID, workflows.Order, t.input(o))
}

// StartNew starts the order's workflow; created is false when the ID exists.
func (t *Temporal) StartNew(ctx context.Context, o order.Order) (bool, error) {
	return t.starter.StartNew(ctx, o.Tenant, o.WorkflowID, workflows.Order, t.input(o))
}

func (t *Temporal) input(o order.Order) workflows.PlaceOrder {
	return workflows.PlaceOrder{Order: o, Policy: t.policy}
}

// StartSettled starts (or finds, running) the order's workflow and waits, up to
// wait, for it to answer UpdateSettled: one call, Update-with-Start. Any error
// (the wait ran out, the workflow closed, a worker without the update) leaves
// the caller to start it the plain way, which is idempotent.
func (t *Temporal) StartSettled(ctx context.Context, o order.Order, wait time.Duration) (workflows.OrderResult, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c := t.starter.Client()
	op := c.NewWithStartWorkflowOperation(t.starter.StartOptions(o.Tenant, o.WorkflowID), workflows.Order, t.input(o))
	var res workflows.OrderResult
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: workflows.UpdateSettled, WaitForStage: client.WorkflowUpdateStageCompleted}})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	return res, err
}

// Cancel sends the cancel update and waits for the order to settle. A workflow that
// refuses it, or has closed, is errNotCancellable; one that accepted it and goes
// on in its next run before the order settled, or still carries it out when ctx
// ends (it waits for a refund held at the provider, say), is errCancelPending:
// the cancel is under way, not unavailable.
func (t *Temporal) Cancel(ctx context.Context, workflowID string) (order.Status, error) {
	h, err := t.starter.Client().UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflowID, UpdateName: workflows.UpdateCancel, WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	var res workflows.OrderResult
	if err == nil {
		// Accepted: a wait for its result that ran out means under way. The
		// SDK's own timeout can end the wait a moment before ctx reports done.
		var waited *client.WorkflowUpdateServiceTimeoutOrCanceledError
		if err = h.Get(ctx, &res); err != nil && (ctx.Err() != nil || errors.As(err, &waited)) {
			return "", errCancelPending
		}
	}
	var appErr *temporal.ApplicationError
	var notFound *serviceerror.NotFound
	switch {
	case err == nil:
		return res.Status, nil
	case errors.As(err, &appErr) && appErr.Type() == workflows.ErrCancelPending:
		return "", errCancelPending
	case errors.As(err, &appErr) && appErr.Type() == workflows.ErrNotCancellable,
		errors.As(err, &notFound): // the workflow has closed
		return "", errNotCancellable
	}
	return "", fmt.Errorf("cancel update of %s: %w", workflowID, err)
}
