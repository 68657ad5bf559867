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
	"github.com/orderflow/orderflow/orders/order"
)

// Names clients use to talk to a running order.
const (
	QueryStatus  = "status"
	UpdateCancel = "cancel"
	// UpdateSettled answers once the order is settled for a client that waits
	// (PAID, PAYMENT_DECLINED, FAILED, CANCELLED), waits on its customer, or the
	// run continues as new: the order as it stands then. The API sends it with the
	// start (Update-with-Start), so the answer comes when the order settles, not
	// when the workflow ends (a cancel window can keep it running for long after).
	UpdateSettled = "settled"
	// SignalIntentChanged wakes an order that waits on its intent (its customer, or
	// processing) to read it now: a hint with no content the order trusts, sent by
	// the provider's webhooks. Any number of them, in any order, does what one does.
	SignalIntentChanged = "intent-changed"
)

// PlaceOrder is the input of Order.
type PlaceOrder struct {
	Order order.Order
	Policy
	// Resume is set when a run continues as new: where the last one stopped.
	Resume *Resume `json:",omitempty"`
}

// Policy is how the workflow treats time; both ingresses start workflows with the
// same one.
type Policy struct {
	// CancelWindow keeps a paid order cancellable (with a refund) before it counts as
	// fulfilled. Zero: fulfilled as soon as it is paid.
	CancelWindow time.Duration
	// LookupDelay is how long to wait after an unknown payment outcome before looking
	// the payment up: the provider's search is eventually consistent, so a charge
	// made a moment ago may not be found yet. Zero: DefaultLookupDelay.
	LookupDelay time.Duration
	// ActionTimeout is how long an order waits on its customer to authenticate
	// (3-D Secure) before its intent is cancelled and the order ends with nothing
	// charged. Zero: DefaultActionTimeout.
	ActionTimeout time.Duration `json:",omitempty"`
	// IntentPoll caps the pause between reads of an intent that waits on its
	// customer or is processing: the provider's webhooks wake the order sooner, and
	// this fallback needs none of them. Zero: DefaultIntentPoll.
	IntentPoll time.Duration `json:",omitempty"`
}

// Defaults and bounds of the policy's waits on an intent.
const (
	DefaultActionTimeout = time.Hour
	MaxActionTimeout     = 7 * 24 * time.Hour
	DefaultIntentPoll    = time.Minute
	minIntentPoll        = 100 * time.Millisecond
	maxIntentPollSetting = 10 * time.Minute
)

// Check reports a policy whose waits are out of their bounds.
func (p Policy) Check() error {
	switch {
	case p.ActionTimeout < 0 || p.ActionTimeout > MaxActionTimeout:
		return fmt.Errorf("payment action timeout %s: want at most %s", p.ActionTimeout, MaxActionTimeout)
	case p.IntentPoll != 0 && (p.IntentPoll < minIntentPoll || p.IntentPoll > maxIntentPollSetting):
		return fmt.Errorf("payment poll interval %s: want %s to %s", p.IntentPoll, minIntentPoll, maxIntentPollSetting)
	}
	return nil
}

// DefaultLookupDelay exceeds the time within which Stripe documents search results
// to be current ("under a minute").
const DefaultLookupDelay = time.Minute

// sameKeyRetry is the pause before sending a payment again with the same key: the
// provider refused our credentials (a rotated secret: nothing ran), or the key is
// still in use (409: the first request runs on, and the key will answer with its
// outcome).
const sameKeyRetry = 5 * time.Second

// OrderResult is the order as the workflow sees it; the status query returns it too.
type OrderResult struct {
	OrderID   string
	Status    order.Status
	ChargeID  string // the intent's charge, once it succeeded
	IntentID  string // the order's PaymentIntent
	RefundID  string
	Failure   string
	Fulfilled bool
}

// run is one run of Order: the order as it stands, and where its payment is.
type run struct {
	steps
	v               workflow.Version // changeClosedDoors's: DefaultVersion for runs started before it
	in              PlaceOrder
	res             OrderResult
	cancelRequested bool
	done            bool
	orphans         bool             // a creation's answer was lost: sweepOrphans runs at the end
	gens            Generations      // the payment keys' generations in use
	ending          *Ending          // the refund in progress, and the end it leads to
	turns           int              // the payment loops' turns in this run
	resting         bool             // the run is about to continue as new
	cancels         workflow.Channel // the cancel update's wake-up of a wait on the intent
	wakes           int              // intent-changed signals acted on in this run
	abandoned       string           // why the intent was cancelled while it waited on its customer
	declined        string           // why the order is declined, once its intent is being closed
	firstPaid       time.Time        // when the order was first recorded PAID, once it is

	// Activity references, always nil: the SDK only needs the methods' names and
	// signatures; the worker runs them on the registered structs.
	orders   *activities.Orders
	payments *activities.Payments
	events   *activities.Events
}

// Order records the order, pays it with one PaymentIntent, marks it paid and
// publishes OrderPaid. A decline ends it PAYMENT_DECLINED; a failure after the
// charge refunds and ends it FAILED; the cancel update cancels or refunds until it
// is fulfilled.
func Order(ctx workflow.Context, in PlaceOrder) (OrderResult, error) {
	in.Order.WorkflowID = workflow.GetInfo(ctx).WorkflowExecution.ID
	r := &run{in: in, res: OrderResult{OrderID: in.Order.ID, Status: order.StatusPending}, cancels: workflow.NewBufferedChannel(ctx, 1)}
	r.v = workflow.GetVersion(ctx, changeClosedDoors, workflow.DefaultVersion, searchStatusVersion)

	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (OrderResult, error) { return r.res, nil }); err != nil {
		return r.res, fmt.Errorf("register query: %w", err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateCancel, r.cancel, workflow.UpdateHandlerOptions{
		Validator: r.validateCancel,
	}); err != nil {
		return r.res, fmt.Errorf("register update: %w", err)
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateSettled, r.settled); err != nil {
		return r.res, fmt.Errorf("register update: %w", err)
	}

	err := r.process(ctx)
	if err != nil && ctx.Err() != nil && r.v >= 1 {
		err = r.compensate(ctx, err)
	}
	if err == nil {
		err = r.sweepOrphans(ctx)
	}
	r.done = true
	// Let an accepted cancel update return its answer before the workflow closes.
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	// Wake-ups that came when nothing waited are hints the order no longer needs.
	for workflow.GetSignalChannel(ctx, SignalIntentChanged).ReceiveAsync(nil) {
	}
	return r.res, err
}

func (r *run) process(ctx workflow.Context) error {
	r.steps = newSteps(ctx)
	if r.v >= 1 {
		// A cancel of the workflow waits for the payment's answer, which its
		// compensation needs.
		r.payIntent = workflow.WithWaitForCancellation(r.payIntent, true)
	}
	if rs := r.in.Resume; rs != nil {
		r.res, r.gens, r.orphans, r.cancelRequested = rs.Result, rs.Gens, rs.Orphans, r.cancelRequested || rs.CancelRequested
		if e := rs.Ending; e != nil {
			return r.refundAndEnd(ctx, e.To, e.Event, e.Reason)
		}
	} else {
		if err := r.storeStep(ctx, nil, r.orders.RecordOrder, r.in.Order); err != nil {
			return fmt.Errorf("record order: %w", err)
		}
		if r.cancelRequested {
			// A reset replays an order that may have been paid: that one is paid
			// again (the ledger answers) and its window decides.
			if paidAt, err := r.paidAt(ctx); err != nil || paidAt == nil {
				if err != nil {
					return err
				}
				return r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled before payment")
			}
		}
	}
	if charged, err := r.pay(ctx); !charged {
		return err
	}

	if r.cancelRequested {
		closed, err := r.windowClosedBefore(ctx)
		if err != nil {
			return err
		}
		if !closed {
			return r.refundAndEnd(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled during payment")
		}
	}
	paidAt, err := r.markPaid(ctx)
	if err != nil || (r.v >= 1 && r.res.Status != order.StatusPaid) {
		return err // ended: refunded, as PAID could not be recorded
	}

	if left := r.windowLeft(ctx, paidAt); r.in.CancelWindow > 0 && left > 0 {
		cancelled, err := workflow.AwaitWithTimeout(ctx, left, func() bool { return r.cancelRequested })
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

// pay pays the order, or settles a payment whose workflow closed before it did.
func (r *run) pay(ctx workflow.Context) (bool, error) {
	if rs := r.in.Resume; rs != nil && rs.Recover {
		return r.recoverPayment(ctx)
	}
	return r.payByIntent(ctx)
}

// windowLeft is what is left of the cancel window of an order first paid at
// paidAt: a run that pays again an order paid before (a reset, a recovery) never
// opens a fresh window.
func (r *run) windowLeft(ctx workflow.Context, paidAt time.Time) time.Duration {
	if r.v < 1 {
		return r.in.CancelWindow
	}
	return paidAt.Add(r.in.CancelWindow).Sub(workflow.Now(ctx))
}

// windowClosedBefore reports whether the order was paid before, by an earlier run
// (a reset replays the payment), longer ago than its cancel window: a cancel then
// refunds nothing, however fresh the run.
func (r *run) windowClosedBefore(ctx workflow.Context) (bool, error) {
	paidAt, err := r.paidAt(ctx)
	return paidAt != nil && !workflow.Now(ctx).Before(paidAt.Add(r.in.CancelWindow)), err
}

// paidAt is when the order was first recorded PAID, by any run; nil if never (and
// for runs started before it was recorded).
func (r *run) paidAt(ctx workflow.Context) (*time.Time, error) {
	if r.v < 1 {
		return nil, nil
	}
	var at *time.Time
	if err := r.storeStep(ctx, &at, r.orders.PaidAt, r.in.Order.ID); err != nil {
		return nil, fmt.Errorf("read when the order was paid: %w", err)
	}
	return at, nil
}

// step is the order's payment with key.
func (r *run) step(key string) activities.Step {
	o := r.in.Order
	return activities.Step{WorkflowID: o.WorkflowID, OrderID: o.ID, Amount: o.Amount, Currency: o.Currency, Key: key}
}

// lookupDelay is the provider's search consistency window, as the policy sets it.
func (r *run) lookupDelay() time.Duration {
	if r.in.LookupDelay <= 0 {
		return DefaultLookupDelay
	}
	return r.in.LookupDelay
}

// paymentRef is what the order's payment is known by at the provider: its
// PaymentIntent.
func (r *run) paymentRef() string { return r.res.IntentID }

// errorType is the Temporal application error type of err ("" for nil, "unknown"
// for anything else: timeouts, exhausted attempts, a lost worker).
func errorType(err error) string {
	var appErr *temporal.ApplicationError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &appErr) && appErr.Type() != "":
		return appErr.Type()
	}
	return "unknown"
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
