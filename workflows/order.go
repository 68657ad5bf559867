// Package workflows holds orderflow's deterministic workflow code. Nothing here reads
// clocks, randomness or the network except through the Temporal SDK.
package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/internal/order"
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

// steps are the options of the workflow's activities. The Postgres steps (recording
// the order, its guarded transitions) are local activities: short, idempotent
// writes that need no round trip through the server to be scheduled. So is the
// publish's first attempt, one Kafka write, idempotent for consumers by its
// eventId. The payment's calls are the only activities scheduled through the
// server while Kafka answers.
type steps struct {
	store        workflow.Context // a local activity
	storeRetry   workflow.Context // the regular store once its local attempts failed
	intent       workflow.Context // cancelling and refunding the order's PaymentIntent
	confirm      workflow.Context // confirming it again
	payIntent    workflow.Context // creating and confirming it in one activity
	lookup       workflow.Context // reading it, and sweeping orphans
	publishRetry workflow.Context // the regular publish
	publishLocal workflow.Context // its local first attempt
}

// retryForever retries with capped backoff and no deadline: an outage of Postgres,
// Kafka or the provider's lookup is a wait, never an outcome.
func retryForever(maxInterval time.Duration, nonRetryable ...string) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2,
		MaximumInterval: maxInterval, NonRetryableErrorTypes: nonRetryable}
}

// newSteps are the options of the order's activities.
//
// Every wait that can last as long as an outage is an activity's retry policy,
// whose attempts add nothing to the history: refused credentials and a key in use
// are sent again with the same key, a processing intent is read again, a Postgres
// step is retried. What is left to the workflow's own loops (a new key after a
// saved 5xx) is bounded by continuing as new (turn).
//
// The store is a local activity, short and idempotent, for up to a minute of
// in-process attempts; past that Postgres is down, and the regular activity waits
// for it (local retries would add timers and workflow tasks to the history). The
// publish's local attempt is one: a local activity holds a workflow task slot while
// it runs, so retried through a Kafka outage the publishes would take every slot
// and stop other orders' charges; and an attempt cut off by its timeout may still
// land in Kafka, so each retry may add a copy. When it fails, the regular publish
// retries until Kafka takes the event.
func newSteps(ctx workflow.Context) steps {
	// intentCalls are the options of an activity each of whose attempts makes calls
	// provider calls, each given 2 minutes: above the provider client's 80 s.
	intentCalls := func(calls int, nonRetryable ...string) workflow.Context {
		return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Duration(calls) * 2 * time.Minute,
			HeartbeatTimeout:    5 * time.Second,
			RetryPolicy:         retryForever(30*time.Second, nonRetryable...),
		})
	}
	final := []string{activities.ErrCardDeclined, activities.ErrPaymentRejected, activities.ErrPaymentUnknown}
	return steps{
		store: workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: time.Minute,
			StartToCloseTimeout:    10 * time.Second,
			// Under the workflow task's timeout, so every retry stays in process.
			RetryPolicy: retryForever(5*time.Second, activities.ErrInvalidTransition),
		}),
		storeRetry: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 10 * time.Second,
			RetryPolicy:         retryForever(30*time.Second, activities.ErrInvalidTransition),
		}),
		intent: intentCalls(1, final...),
		// A confirm whose key is in use is answered by reading the intent.
		confirm: intentCalls(1, slices.Concat(final, []string{activities.ErrPaymentInFlight})...),
		// The creation and the confirm; the activity itself makes a confirm's key in
		// use final.
		payIntent: intentCalls(2, final...),
		lookup: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 30 * time.Second,
			RetryPolicy:         retryForever(30 * time.Second),
		}),
		publishRetry: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 15 * time.Second,
			HeartbeatTimeout:    5 * time.Second,
			RetryPolicy:         retryForever(30 * time.Second),
		}),
		publishLocal: workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: 5 * time.Second,
			StartToCloseTimeout:    5 * time.Second,
			RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		}),
	}
}

// storeStep runs a Postgres step of the order: locally, then, if Postgres is still
// not answering, as a regular activity that waits for it.
// out, when not nil, receives the step's result.
func (r *run) storeStep(ctx workflow.Context, out any, activity any, args ...any) error {
	err := workflow.ExecuteLocalActivity(r.store, activity, args...).Get(ctx, out)
	if err == nil || errorType(err) == activities.ErrInvalidTransition {
		return err
	}
	return workflow.ExecuteActivity(r.storeRetry, activity, args...).Get(ctx, out)
}

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

// ErrNotCancellable is the error type of the cancel update's rejection of an order
// that is past cancelling. A cancel while another is going through is taken: it
// is that cancel retried (its answer was slow), and answers with it.
const ErrNotCancellable = "NotCancellable"

func (r *run) validateCancel() error {
	if r.res.Status.Terminal() || r.res.Fulfilled || r.done {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("order %s can no longer be cancelled: status %s", r.in.Order.ID, r.res.Status), ErrNotCancellable, nil)
	}
	return nil
}

// ErrCancelPending is the error type of the cancel update's answer when the run
// continues as new before the order settled: the cancel is accepted, and the next
// run carries it out.
const ErrCancelPending = "CancelPending"

// cancel asks the main flow to cancel and answers once the order has settled.
func (r *run) cancel(ctx workflow.Context) (OrderResult, error) {
	if !r.cancelRequested { // a retried cancel joins the first one's wait
		r.cancelRequested = true
		r.cancels.SendAsync(true)
	}
	settled := func() bool { return r.res.Status.Terminal() || r.res.Fulfilled || r.done }
	if err := workflow.Await(ctx, func() bool { return settled() || r.resting }); err != nil {
		return r.res, err
	}
	if !settled() {
		return r.res, temporal.NewApplicationError("cancel accepted; the order settles in the workflow's next run", ErrCancelPending)
	}
	return r.res, nil
}

// settled answers UpdateSettled: the order once a waiting client has its answer.
func (r *run) settled(ctx workflow.Context) (OrderResult, error) {
	err := workflow.Await(ctx, func() bool { return Answered(r.res.Status) || r.resting || r.done })
	return r.res, err
}

// Answered reports the statuses that answer a client waiting for its order: the
// ends of a payment, and the wait on a customer (whom the client must send on).
func Answered(s order.Status) bool {
	switch s {
	case order.StatusPaid, order.StatusPaymentDeclined, order.StatusFailed, order.StatusCancelled, order.StatusActionRequired:
		return true
	}
	return false
}

// maxTurns bounds the turns of a run's payment loops, each a new key after an
// unknown outcome (a saved 5xx) and about a dozen history events: past it, or
// when the server suggests it, the run continues as new with its state. A run's
// history stays under about 600 events however long the outage lasts, against
// Temporal's limit of 51,200.
const maxTurns = 40

// Resume is what a run hands to the run it continues as: the order as it stands
// and the keys in use, so the next run sends what this one would have. The
// reconciler starts a run with Recover set for an order whose workflow closed
// before its payment settled: Result carries the order's status and the intent
// the ledger names.
type Resume struct {
	Result          OrderResult
	Gens            Generations
	Orphans         bool
	CancelRequested bool
	Ending          *Ending `json:",omitempty"`
	Recover         bool    `json:",omitempty"`
}

// changeClosedDoors is the change after which a declined order closes its intent,
// the cancel window is anchored to the time the order was first paid, a cancel of
// the workflow compensates, and the reconciler's recovery runs exist.
// Its version 2 (searchStatusVersion) also keeps the OrderflowStatus search
// attribute as the read model's status moves.
const changeClosedDoors = "closed-doors"

// searchStatusVersion is changeClosedDoors's version from which a run upserts its
// status search attribute on each move; runs that recorded 1 never do.
const searchStatusVersion = 2

// Generations are the generations of the order's payment keys in use.
type Generations struct {
	Create, Confirm, Refund int
	Refused                 int // refunds the provider refused
}

// Ending is a refund in progress and the end it leads to.
type Ending struct {
	To     order.Status
	Event  string
	Reason string
}

// turn counts one turn of a payment loop, and continues the run as new once it has
// taken maxTurns. An open cancel update answers first (ErrCancelPending).
func (r *run) turn(ctx workflow.Context) error {
	if r.turns++; r.turns < maxTurns && !workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
		return nil
	}
	r.resting = true
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	next := r.in
	next.Resume = &Resume{Result: r.res, Gens: r.gens, Orphans: r.orphans, CancelRequested: r.cancelRequested, Ending: r.ending}
	return workflow.NewContinueAsNewError(ctx, Order, next)
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
