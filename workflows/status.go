package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
)

// move records a status in the read model and in the workflow's own view.
func (r *run) move(ctx workflow.Context, to order.Status, paymentRef string) error {
	err := r.storeStep(ctx, nil, r.orders.Transition, activities.Transition{
		OrderID: r.in.Order.ID, To: to, PaymentRef: paymentRef,
	})
	if err != nil {
		return fmt.Errorf("record %s: %w", to, err)
	}
	r.res.Status = to
	return r.searchStatus(ctx)
}

// searchStatus sets the OrderflowStatus search attribute to the status the read
// model was just given, in the same workflow task as the move: one event, no task
// of its own. Runs of an earlier version never do.
func (r *run) searchStatus(ctx workflow.Context) error {
	if r.v < searchStatusVersion {
		return nil
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, statusAttribute(string(r.res.Status))); err != nil {
		return fmt.Errorf("search attribute %s: %w", r.res.Status, err)
	}
	return nil
}

// markPaid records PAID and publishes OrderPaid, and returns when the order was
// first recorded PAID (by this run or, before a reset or a recovery, by another),
// to which its cancel window is anchored. Recording PAID can only fail if the
// order's state forbids it, after money moved: the order is refunded. The publish
// retries until Kafka takes it, and the order stays PAID meanwhile.
func (r *run) markPaid(ctx workflow.Context) (time.Time, error) {
	paidAt := workflow.Now(ctx)
	t := activities.Transition{OrderID: r.in.Order.ID, To: order.StatusPaid, PaymentRef: r.paymentRef()}
	var err error
	if r.v >= 1 {
		err = r.storeStep(ctx, &paidAt, r.orders.MarkPaid, t)
	} else {
		err = r.storeStep(ctx, nil, r.orders.Transition, t)
	}
	switch {
	case err != nil && r.v >= 1 && ctx.Err() != nil:
		return paidAt, err // the workflow is cancelled: its compensation refunds
	case err != nil:
		return paidAt, r.refundAndEnd(ctx, order.StatusFailed, activities.EventOrderFailed, "after charge: "+rootMessage(err))
	}
	r.res.Status, r.firstPaid = order.StatusPaid, paidAt
	if err := r.searchStatus(ctx); err != nil {
		return paidAt, err
	}
	if err := r.publish(ctx, activities.EventOrderPaid, ""); err != nil {
		return paidAt, fmt.Errorf("publish %s: %w", activities.EventOrderPaid, err)
	}
	return paidAt, nil
}

// refundAndEnd is the compensation for a charge that must not stand.
func (r *run) refundAndEnd(ctx workflow.Context, to order.Status, event, reason string) error {
	r.ending = &Ending{To: to, Event: event, Reason: reason}
	refundID, err := r.refundIntent(ctx)
	if err != nil {
		r.res.Failure = reason + "; refund failed: " + rootMessage(err)
		return fmt.Errorf("refund payment %s: %w", r.paymentRef(), err)
	}
	r.res.RefundID = refundID
	if refundID == "" {
		return r.end(ctx, to, event, reason+"; refunded in full elsewhere")
	}
	return r.end(ctx, to, event, reason+"; refunded "+refundID)
}

// end records a final status and publishes its event.
func (r *run) end(ctx workflow.Context, to order.Status, event, reason string) error {
	failure := ""
	if to != order.StatusCancelled {
		failure = reason
	}
	err := r.storeStep(ctx, nil, r.orders.Transition, activities.Transition{
		OrderID: r.in.Order.ID, To: to, Failure: failure,
	})
	if err != nil {
		return fmt.Errorf("record %s: %w", to, err)
	}
	r.res.Status, r.res.Failure = to, failure
	if err := r.searchStatus(ctx); err != nil {
		return err
	}
	if err := r.publish(ctx, event, reason); err != nil {
		return fmt.Errorf("publish %s: %w", event, err)
	}
	return nil
}

// publish sends one of the order's events: a local attempt first, then the
// regular activity, which holds no workflow task slot while Kafka is not taking
// writes.
func (r *run) publish(ctx workflow.Context, eventType, reason string) error {
	o := r.in.Order
	e := activities.Event{
		Type: eventType, OrderID: o.ID, Tenant: o.Tenant, WorkflowID: o.WorkflowID,
		Status: r.res.Status, Amount: o.Amount, Currency: o.Currency,
		PaymentRef: r.paymentRef(), Reason: reason, OccurredAt: workflow.Now(ctx).UTC(),
	}
	if err := workflow.ExecuteLocalActivity(r.publishLocal, r.events.Publish, e).Get(ctx, nil); err == nil {
		return nil
	}
	return workflow.ExecuteActivity(r.publishRetry, r.events.Publish, e).Get(ctx, nil)
}
