package workflows

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/payments/refund"
)

// RefundInput is the input of Refund.
type RefundInput struct {
	Refund refund.Refund
	// Gen is the generation of the provider key a run continued as new sends
	// first; 0 for a new refund.
	Gen int `json:",omitempty"`
}

// RefundResult is a refund request as its workflow ended it.
type RefundResult struct {
	Status           refund.Status
	Amount           int64 // refunded (SUCCEEDED), or reserved before the provider refused it
	ProviderRefundID string
	Failure          string
}

// refundRun is one run of Refund.
type refundRun struct {
	in      RefundInput
	r       refund.Refund
	store   workflow.Context // Postgres steps
	reserve workflow.Context // the reservation: a list at the provider, then Postgres
	send    workflow.Context // the refund at the provider
	publish workflow.Context

	// Activity references, always nil: the SDK only needs the methods' names and
	// signatures; the worker runs them on the registered structs.
	payments *activities.Payments
	events   *activities.Events
}

// Refund runs a refund request: it records the refund (first, so one an event
// started is readable at once), reserves its amount out of what is left of the
// order's charge, sends it to the provider with a key derived from the workflow
// ID and a generation, then has the order follow its payment and publishes
// RefundSucceeded or RefundFailed. The refund's row and its key's ledger row are
// its memory: a retry, a continued run or a reset finds the refund where it
// stands and sends nothing new to the provider.
func Refund(ctx workflow.Context, in RefundInput) (RefundResult, error) {
	w := newRefundRun(ctx, in)
	if err := workflow.ExecuteActivity(w.store, w.payments.RecordRefund, w.r).Get(ctx, nil); err != nil {
		return RefundResult{}, fmt.Errorf("record refund: %w", err)
	}
	var res activities.Reservation
	if err := workflow.ExecuteActivity(w.reserve, w.payments.ReserveRefund, w.r).Get(ctx, &res); err != nil {
		return RefundResult{}, fmt.Errorf("reserve refund: %w", err)
	}
	if res.Status == refund.StatusPending {
		sent, err := w.sendRefund(ctx, res)
		if err != nil {
			return RefundResult{}, err // a continued run is an error too
		}
		res.Status, res.Amount, res.ProviderRefundID, res.Failure = sent.Status, sent.Amount, sent.ProviderRefundID, sent.Failure
	}
	out := RefundResult{Status: res.Status, Amount: res.Amount, ProviderRefundID: res.ProviderRefundID, Failure: res.Failure}
	if out.Status == refund.StatusSucceeded {
		if err := w.follow(ctx, res); err != nil {
			return out, fmt.Errorf("follow the order's payment: %w", err)
		}
	}
	return out, w.publishEnd(ctx, res)
}

// newRefundRun is the run of in, with its activities' options. Every wait that can
// last as long as an outage is a retry policy; only a key's lost answer (a saved
// 5xx, ErrPaymentUnknown) comes back to the workflow, which sends the next
// generation's key. A refusal is an answer, not an error: never retried.
func newRefundRun(ctx workflow.Context, in RefundInput) *refundRun {
	r := in.Refund
	r.WorkflowID = workflow.GetInfo(ctx).WorkflowExecution.ID
	if r.ID == "" {
		r.ID = refund.IDFor(r.WorkflowID)
	}
	return &refundRun{
		in: in, r: r,
		store: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 10 * time.Second, RetryPolicy: retryForever(30 * time.Second),
		}),
		// A list, then a transaction; the provider call given 2 minutes, above
		// the provider client's 80 s.
		reserve: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 2 * time.Minute, RetryPolicy: retryForever(30 * time.Second),
		}),
		// The refund, and a list when its answer is not a success.
		send: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 4 * time.Minute, HeartbeatTimeout: 5 * time.Second,
			RetryPolicy: retryForever(30*time.Second, activities.ErrPaymentUnknown, activities.ErrRefundNotReserved),
		}),
		publish: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 15 * time.Second, HeartbeatTimeout: 5 * time.Second, RetryPolicy: retryForever(30 * time.Second),
		}),
	}
}

// sendRefund sends the reserved refund with the key of generation in.Gen and,
// each time a key's answer is lost for good with nothing made (the activity has
// read the intent's refunds), with the next generation's, as the order's charge
// does. Past maxTurns keys, the run continues as new with the next generation.
func (w *refundRun) sendRefund(ctx workflow.Context, res activities.Reservation) (activities.Reservation, error) {
	for gen, turns := w.in.Gen, 1; ; gen, turns = gen+1, turns+1 {
		var sent activities.Reservation
		err := workflow.ExecuteActivity(w.send, w.payments.SendRefund, activities.SendInput{
			Refund: w.r, IntentID: res.IntentID, Currency: res.Order.Currency, Gen: gen,
		}).Get(ctx, &sent)
		if errorType(err) != activities.ErrPaymentUnknown {
			return sent, err
		}
		if err := workflow.Sleep(ctx, newKeyPause(gen)); err != nil {
			return sent, err
		}
		if turns >= maxTurns || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			next := w.in
			next.Refund, next.Gen = w.r, gen+1
			return sent, workflow.NewContinueAsNewError(ctx, Refund, next)
		}
	}
}

// follow starts the order's FollowPayment for this refund, so the order moves to
// PARTIALLY_REFUNDED or REFUNDED and publishes it. A child workflow, not an
// activity: the worker's activities hold no Temporal client, and the engine
// starts a child once, recorded in this history, under the follow ID of the
// trigger "refund <ID>", which a reset's second start finds taken. Abandoned: the
// order follows on its own once started.
func (w *refundRun) follow(ctx workflow.Context, res activities.Reservation) error {
	child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            FollowWorkflowID(res.Order.WorkflowID, "refund "+w.r.ID),
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	})
	err := workflow.ExecuteChildWorkflow(child, FollowPayment, FollowOrder{Order: res.Order, IntentID: res.IntentID}).
		GetChildWorkflowExecution().Get(ctx, nil)
	if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return nil // started before this run: it does the same
	}
	return err
}

// publishEnd publishes RefundSucceeded or RefundFailed, keyed by the order like
// its own events. A refund of an order that does not exist has no order to key
// an event by, and publishes none: the refund's row says why it failed.
func (w *refundRun) publishEnd(ctx workflow.Context, res activities.Reservation) error {
	if res.Order.ID == "" {
		return nil
	}
	e := activities.Event{Type: activities.EventRefundFailed, OrderID: res.Order.ID, Tenant: w.r.Tenant, WorkflowID: w.r.WorkflowID,
		Amount: res.Order.Amount, Currency: res.Order.Currency, PaymentRef: res.IntentID, Reason: res.Failure,
		RefundID: w.r.ID, RefundAmount: w.r.Amount, OccurredAt: workflow.Now(ctx).UTC()}
	if res.Status == refund.StatusSucceeded {
		e.Type, e.Reason, e.RefundAmount = activities.EventRefundSucceeded, "", res.Amount
	}
	return workflow.ExecuteActivity(w.publish, w.events.Publish, e).Get(ctx, nil)
}
