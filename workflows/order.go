// Package workflows holds orderflow's deterministic workflow code. Nothing here reads
// clocks, randomness or the network except through the Temporal SDK.
package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/internal/order"
)

// Names clients use to talk to a running OrderWorkflow.
const (
	QueryStatus  = "status"
	UpdateCancel = "cancel"
)

// PlaceOrder is the input of OrderWorkflow.
type PlaceOrder struct {
	Order order.Order
	// CancelWindow keeps a paid order cancellable (with a refund) before it counts as
	// fulfilled. Zero: fulfilled as soon as it is paid.
	CancelWindow time.Duration
}

// OrderResult is the order as the workflow sees it; the status query returns it too.
type OrderResult struct {
	OrderID   string
	Status    order.Status
	ChargeID  string
	RefundID  string
	Failure   string
	Fulfilled bool
}

func activityContexts(ctx workflow.Context) (store, pay, publish workflow.Context) {
	store = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        200 * time.Millisecond,
			BackoffCoefficient:     2,
			MaximumInterval:        10 * time.Second,
			NonRetryableErrorTypes: []string{activities.ErrInvalidTransition},
		},
	})
	// The provider call can be slow; heartbeats let a dead worker's attempt be
	// retried after 5 s rather than after the full timeout. Retrying is safe because
	// every attempt carries the same idempotency key.
	pay = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		HeartbeatTimeout:       5 * time.Second,
		ScheduleToCloseTimeout: time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			NonRetryableErrorTypes: []string{activities.ErrCardDeclined, activities.ErrPaymentRejected},
		},
	})
	publish = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    15 * time.Second,
		HeartbeatTimeout:       5 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    500 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    15 * time.Second,
		},
	})
	return store, pay, publish
}

type run struct {
	in              PlaceOrder
	res             OrderResult
	cancelRequested bool
	done            bool
	store, pay, pub workflow.Context

	// Activity references, always nil: the SDK only needs the methods' names and
	// signatures; the worker runs them on the registered structs.
	orders   *activities.Orders
	payments *activities.Payments
	events   *activities.Events
}

// OrderWorkflow records the order, charges it once, marks it paid and publishes
// OrderPaid. A decline ends it PAYMENT_DECLINED; a failure after the charge refunds
// and ends it FAILED; the cancel update cancels or refunds until it is fulfilled.
func OrderWorkflow(ctx workflow.Context, in PlaceOrder) (OrderResult, error) {
	in.Order.WorkflowID = workflow.GetInfo(ctx).WorkflowExecution.ID
	r := &run{in: in, res: OrderResult{OrderID: in.Order.ID, Status: order.StatusPending}}
	r.store, r.pay, r.pub = activityContexts(ctx)

	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (OrderResult, error) { return r.res, nil }); err != nil {
		return r.res, fmt.Errorf("register query: %w", err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateCancel, r.cancel, workflow.UpdateHandlerOptions{
		Validator: r.validateCancel,
	}); err != nil {
		return r.res, fmt.Errorf("register update: %w", err)
	}

	err := r.process(ctx)
	r.done = true
	// Let an accepted cancel update return its answer before the workflow closes.
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	return r.res, err
}

func (r *run) process(ctx workflow.Context) error {
	if err := workflow.ExecuteActivity(r.store, r.orders.RecordOrder, r.in.Order).Get(ctx, nil); err != nil {
		return fmt.Errorf("record order: %w", err)
	}
	if r.cancelRequested {
		return r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled before payment")
	}

	r.res.Status = order.StatusPaymentPending
	var ch activities.ChargeResult
	err := workflow.ExecuteActivity(r.pay, r.payments.Charge, activities.ChargeInput{
		WorkflowID:    r.in.Order.WorkflowID,
		OrderID:       r.in.Order.ID,
		Amount:        r.in.Order.Amount,
		Currency:      r.in.Order.Currency,
		PaymentMethod: r.in.Order.PaymentMethod,
	}).Get(ctx, &ch)
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr) && appErr.Type() == activities.ErrCardDeclined:
		return r.end(ctx, order.StatusPaymentDeclined, activities.EventOrderPaymentDeclined, "card declined")
	case err != nil:
		// Either the provider refused the request or the outcome stayed unknown for
		// the whole retry budget; nothing was confirmed charged.
		return r.end(ctx, order.StatusFailed, activities.EventOrderFailed, "charge failed: "+rootMessage(err))
	}
	r.res.ChargeID = ch.ChargeID

	if r.cancelRequested {
		return r.refundAndEnd(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled during payment")
	}
	if err := r.markPaid(ctx); err != nil {
		return r.refundAndEnd(ctx, order.StatusFailed, activities.EventOrderFailed, "after charge: "+rootMessage(err))
	}

	if r.in.CancelWindow > 0 {
		cancelled, err := workflow.AwaitWithTimeout(ctx, r.in.CancelWindow, func() bool { return r.cancelRequested })
		if err != nil {
			return fmt.Errorf("cancel window: %w", err)
		}
		if cancelled {
			return r.refundAndEnd(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled after payment")
		}
	}
	r.res.Fulfilled = true
	return nil
}

// markPaid records PAID and publishes OrderPaid; a failure here comes after money
// moved, so the caller compensates.
func (r *run) markPaid(ctx workflow.Context) error {
	err := workflow.ExecuteActivity(r.store, r.orders.Transition, activities.Transition{
		OrderID: r.in.Order.ID, To: order.StatusPaid, PaymentRef: r.res.ChargeID,
	}).Get(ctx, nil)
	if err != nil {
		return fmt.Errorf("mark paid: %w", err)
	}
	r.res.Status = order.StatusPaid
	if err := r.publish(ctx, activities.EventOrderPaid, ""); err != nil {
		return fmt.Errorf("publish %s: %w", activities.EventOrderPaid, err)
	}
	return nil
}

// refundAndEnd is the compensation for a charge that must not stand.
func (r *run) refundAndEnd(ctx workflow.Context, to order.Status, event, reason string) error {
	var re activities.RefundResult
	err := workflow.ExecuteActivity(r.pay, r.payments.Refund, activities.RefundInput{
		WorkflowID: r.in.Order.WorkflowID, OrderID: r.in.Order.ID, ChargeID: r.res.ChargeID,
		Amount: r.in.Order.Amount, Currency: r.in.Order.Currency,
	}).Get(ctx, &re)
	if err != nil {
		r.res.Failure = reason + "; refund failed: " + rootMessage(err)
		return fmt.Errorf("refund charge %s: %w", r.res.ChargeID, err)
	}
	r.res.RefundID = re.RefundID
	return r.end(ctx, to, event, reason+"; refunded "+re.RefundID)
}

// end records a final status and publishes its event.
func (r *run) end(ctx workflow.Context, to order.Status, event, reason string) error {
	failure := ""
	if to != order.StatusCancelled {
		failure = reason
	}
	err := workflow.ExecuteActivity(r.store, r.orders.Transition, activities.Transition{
		OrderID: r.in.Order.ID, To: to, Failure: failure,
	}).Get(ctx, nil)
	if err != nil {
		return fmt.Errorf("record %s: %w", to, err)
	}
	r.res.Status, r.res.Failure = to, failure
	if err := r.publish(ctx, event, reason); err != nil {
		return fmt.Errorf("publish %s: %w", event, err)
	}
	return nil
}

func (r *run) publish(ctx workflow.Context, eventType, reason string) error {
	o := r.in.Order
	return workflow.ExecuteActivity(r.pub, r.events.Publish, activities.Event{
		Type: eventType, OrderID: o.ID, Tenant: o.Tenant, WorkflowID: o.WorkflowID,
		Status: r.res.Status, Amount: o.Amount, Currency: o.Currency,
		PaymentRef: r.res.ChargeID, Reason: reason, OccurredAt: workflow.Now(ctx).UTC(),
	}).Get(ctx, nil)
}

// ErrNotCancellable is the error type of the cancel update's rejection of an order
// that is past cancelling (or already being cancelled).
const ErrNotCancellable = "NotCancellable"

func (r *run) validateCancel() error {
	if r.res.Status.Terminal() || r.res.Fulfilled || r.cancelRequested || r.done {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("order %s can no longer be cancelled: status %s", r.in.Order.ID, r.res.Status), ErrNotCancellable, nil)
	}
	return nil
}

// cancel asks the main flow to cancel and answers once the order has settled.
func (r *run) cancel(ctx workflow.Context) (OrderResult, error) {
	r.cancelRequested = true
	if err := workflow.Await(ctx, func() bool { return r.res.Status.Terminal() || r.res.Fulfilled || r.done }); err != nil {
		return r.res, err
	}
	return r.res, nil
}

// rootMessage is the innermost error's message, for a readable failure reason.
func rootMessage(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
