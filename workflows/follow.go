package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/tenants/fairness"
)

// FollowOrder names a paid order whose payment others may have refunded or
// disputed at the provider.
type FollowOrder struct {
	Order    order.Order // ID, tenant, workflow ID, amount, currency
	IntentID string
}

// FollowWorkflowID is the ID of the FollowPayment run that a trigger (a webhook
// event, a refund or dispute the reconciler found) starts for an order: one run
// per trigger, however often it is delivered.
func FollowWorkflowID(orderWorkflowID, trigger string) string {
	return "follow:" + orderWorkflowID + ":" + trigger
}

// Starter starts workflows (Temporal's client does).
type Starter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// StartFollow starts the FollowPayment run of a trigger for a paid order on queue,
// with its tenant as fairness key: once per trigger, even after it closed.
func StartFollow(ctx context.Context, c Starter, queue string, fair fairness.Weights, o order.Order, intentID, trigger string) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: FollowWorkflowID(o.WorkflowID, trigger), TaskQueue: queue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true, Priority: fair.Priority(o.Tenant)},
		FollowPayment, FollowOrder{Order: o, IntentID: intentID})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("follow the payment of %s: %w", o.ID, err)
	}
	return nil
}

// eventOf is the event an order moved to status by others publishes.
var eventOf = map[order.Status]string{
	order.StatusPartiallyRefunded: activities.EventOrderPartiallyRefunded,
	order.StatusRefunded:          activities.EventOrderRefunded,
	order.StatusDisputed:          activities.EventOrderDisputed,
	order.StatusPaid:              activities.EventOrderDisputeWon,
}

// FollowPayment moves a paid order to what the provider holds of its payment
// (refunds and disputes made elsewhere) and, when it moved, publishes the event of
// its new status. A refund request whose refund the provider failed later
// publishes RefundFailed, and the order that moved back OrderRefundReversed. The
// webhooks of refunds and disputes start it, and so does the reconciler for what
// it finds.
func FollowPayment(ctx workflow.Context, in FollowOrder) (activities.FollowResult, error) {
	var p *activities.Payments
	var ev *activities.Events
	read := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second, RetryPolicy: retryForever(30 * time.Second),
	})
	o := in.Order
	var res activities.FollowResult
	err := workflow.ExecuteActivity(read, p.FollowPayment, activities.FollowInput{
		OrderID: o.ID, Tenant: o.Tenant, IntentID: in.IntentID, Amount: o.Amount, Currency: o.Currency,
	}).Get(ctx, &res)
	if err != nil {
		return res, err
	}
	publish := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 15 * time.Second, HeartbeatTimeout: 5 * time.Second, RetryPolicy: retryForever(30 * time.Second),
	})
	for _, rv := range res.Reversed {
		e := activities.Event{Type: activities.EventRefundFailed, OrderID: o.ID, Tenant: o.Tenant, WorkflowID: rv.WorkflowID,
			Amount: o.Amount, Currency: o.Currency, PaymentRef: in.IntentID, Reason: rv.Failure,
			RefundID: rv.RefundID, RefundAmount: rv.Amount, OccurredAt: workflow.Now(ctx).UTC()}
		if err := workflow.ExecuteActivity(publish, ev.Publish, e).Get(ctx, nil); err != nil {
			return res, err
		}
	}
	if !res.Changed {
		return res, nil
	}
	e := activities.Event{Type: eventOf[res.Status], OrderID: o.ID, Tenant: o.Tenant, WorkflowID: o.WorkflowID,
		Status: res.Status, Amount: o.Amount, Currency: o.Currency, PaymentRef: in.IntentID,
		AmountRefunded: res.Refunded, OccurredAt: workflow.Now(ctx).UTC()}
	if len(res.Reversed) > 0 {
		e.Type = activities.EventOrderRefundReversed
	}
	return res, workflow.ExecuteActivity(publish, ev.Publish, e).Get(ctx, nil)
}
