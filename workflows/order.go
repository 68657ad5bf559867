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
	Policy
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
}

// DefaultLookupDelay exceeds the time within which Stripe documents search results
// to be current ("under a minute").
const DefaultLookupDelay = time.Minute

// sameKeyRetry is the pause before sending a payment again with the same key: the
// provider refused our credentials (a rotated secret: nothing ran), or the key is
// still in use (409: the first request runs on, and the key will answer with its
// outcome).
const sameKeyRetry = 5 * time.Second

// The versioned changes of OrderWorkflow, in the order they landed; steps asks each
// once per run. A run started before one takes the path in order_legacy.go.
const (
	// changePayments protects runs that predate fixed-length provider keys, lookups
	// of unknown outcomes and steps that wait out outages.
	changePayments = "payments-reconcile"
	// changeLocalStore protects runs whose Postgres steps are regular activities.
	changeLocalStore = "local-store-steps"
	// changeLocalPublish protects runs that publish only through a regular activity.
	changeLocalPublish = "local-publish"
	// changeIntents protects runs that pay through the Charges API, reconciled by
	// search, instead of one PaymentIntent read back by ID.
	changeIntents = "payment-intents"
)

// noDeadline is a timeout no outage reaches (Temporal has no "never").
const noDeadline = 10 * 365 * 24 * time.Hour

// OrderResult is the order as the workflow sees it; the status query returns it too.
type OrderResult struct {
	OrderID   string
	Status    order.Status
	ChargeID  string
	IntentID  string // the order's PaymentIntent (runs since changeIntents)
	RefundID  string
	Failure   string
	Fulfilled bool
}

// steps are the options of the workflow's activities. The Postgres steps (recording
// the order, its guarded transitions) are local activities: short, idempotent
// writes that need no round trip through the server to be scheduled. So is the
// publish's first attempt, one Kafka write, idempotent for consumers by its
// eventId. The charge and a refund are the only activities scheduled through the
// server while Kafka answers.
type steps struct {
	store        workflow.Context // a local activity unless storeRegular
	storeRegular bool             // runs before changeLocalStore
	pay          workflow.Context // the Charges API's calls, and refunds
	intent       workflow.Context // creating and confirming the order's PaymentIntent
	lookup       workflow.Context
	publishRetry workflow.Context // the regular publish
	publishLocal workflow.Context // its local first attempt; nil in runs before changeLocalPublish
}

// retryForever retries with capped backoff and no deadline: an outage of Postgres,
// Kafka or the provider's lookup is a wait, never an outcome.
func retryForever(maxInterval time.Duration, nonRetryable ...string) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2,
		MaximumInterval: maxInterval, NonRetryableErrorTypes: nonRetryable}
}

// currentSteps are the options of runs started since every versioned change. The
// charge gets a few quick attempts with the same key; past those its outcome is
// unknown and a lookup decides. A local activity's retries stop at its
// ScheduleToCloseTimeout, which defaults to one attempt's timeout: the store's is
// set out of reach (the worker heartbeats the workflow task meanwhile). The
// publish's local attempt is one: a local activity holds a workflow task slot while
// it runs, so retried through a Kafka outage the publishes would take every slot
// and stop other orders' charges; and an attempt cut off by its timeout may still
// land in Kafka, so each retry may add a copy. When it fails, the regular publish
// retries until Kafka takes the event.
func currentSteps(ctx workflow.Context) steps {
	return steps{
		store: workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: noDeadline,
			StartToCloseTimeout:    10 * time.Second,
			RetryPolicy:            retryForever(30*time.Second, activities.ErrInvalidTransition),
		}),
		pay: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 30 * time.Second,
			HeartbeatTimeout:    5 * time.Second,
			RetryPolicy: &temporal.RetryPolicy{
				InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 4,
				NonRetryableErrorTypes: []string{activities.ErrCardDeclined, activities.ErrPaymentRejected,
					activities.ErrPaymentUnknown, activities.ErrProviderUnauthorized},
			},
		}),
		intent: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 2 * time.Minute, // above the provider client's 80 s
			HeartbeatTimeout:    5 * time.Second,
			RetryPolicy: retryForever(30*time.Second, activities.ErrCardDeclined, activities.ErrPaymentRejected,
				activities.ErrPaymentUnknown, activities.ErrProviderUnauthorized, activities.ErrPaymentInFlight),
		}),
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

// stepsFor asks the versioned changes, oldest first, and returns the path the run
// takes: the current one, or the legacy one of the first change it predates.
func stepsFor(ctx workflow.Context) (steps, legacy) {
	if workflow.GetVersion(ctx, changePayments, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return stepsBeforePayments(ctx), legacy{beforePayments: true, beforeIntents: true}
	}
	s := currentSteps(ctx)
	if workflow.GetVersion(ctx, changeLocalStore, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return stepsBeforeLocalStore(ctx, s), legacy{beforeIntents: true}
	}
	if workflow.GetVersion(ctx, changeLocalPublish, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		s.publishLocal = nil
		return s, legacy{beforeIntents: true}
	}
	if workflow.GetVersion(ctx, changeIntents, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return s, legacy{beforeIntents: true}
	}
	return s, legacy{}
}

// storeStep runs a Postgres step of the order.
func (r *run) storeStep(activity any, args ...any) workflow.Future {
	if r.storeRegular {
		return workflow.ExecuteActivity(r.store, activity, args...)
	}
	return workflow.ExecuteLocalActivity(r.store, activity, args...)
}

type run struct {
	steps
	legacy
	in              PlaceOrder
	res             OrderResult
	cancelRequested bool
	done            bool
	orphans         bool // a creation's answer was lost: sweepOrphans runs at the end

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

	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (OrderResult, error) { return r.res, nil }); err != nil {
		return r.res, fmt.Errorf("register query: %w", err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateCancel, r.cancel, workflow.UpdateHandlerOptions{
		Validator: r.validateCancel,
	}); err != nil {
		return r.res, fmt.Errorf("register update: %w", err)
	}

	err := r.process(ctx)
	if err == nil {
		err = r.sweepOrphans(ctx)
	}
	r.done = true
	// Let an accepted cancel update return its answer before the workflow closes.
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	return r.res, err
}

func (r *run) process(ctx workflow.Context) error {
	r.steps, r.legacy = stepsFor(ctx)
	if err := r.storeStep(r.orders.RecordOrder, r.in.Order).Get(ctx, nil); err != nil {
		return fmt.Errorf("record order: %w", err)
	}
	if r.cancelRequested {
		return r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled before payment")
	}
	charge, _ := r.paymentPath()
	if charged, err := charge(ctx); !charged {
		return err
	}

	if r.cancelRequested {
		return r.refundAndEnd(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled during payment")
	}
	if err := r.markPaid(ctx); err != nil {
		return err
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

// step is the order's payment with key.
func (r *run) step(key string) activities.Step {
	o := r.in.Order
	return activities.Step{WorkflowID: o.WorkflowID, OrderID: o.ID, Amount: o.Amount, Currency: o.Currency, Key: key}
}

// paymentPath is how the run pays and refunds: one PaymentIntent, or the path of
// the first change it predates.
func (r *run) paymentPath() (charge func(workflow.Context) (bool, error), refund func(workflow.Context) (string, error)) {
	switch {
	case r.beforePayments:
		return r.chargeBeforePayments, r.refundBeforePayments
	case r.beforeIntents:
		return r.chargeBeforeIntents, r.refundBeforeIntents
	}
	return r.payByIntent, r.refundIntent
}

// chargeInput asks for the order's charge with key.
func (r *run) chargeInput(key string) activities.ChargeInput {
	return activities.ChargeInput{Step: r.step(key), PaymentMethod: r.in.Order.PaymentMethod}
}

// move records a status in the read model and in the workflow's own view.
func (r *run) move(ctx workflow.Context, to order.Status, paymentRef string) error {
	err := r.storeStep(r.orders.Transition, activities.Transition{
		OrderID: r.in.Order.ID, To: to, PaymentRef: paymentRef,
	}).Get(ctx, nil)
	if err != nil {
		return fmt.Errorf("record %s: %w", to, err)
	}
	r.res.Status = to
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
// PaymentIntent, or the charge of runs before changeIntents.
func (r *run) paymentRef() string {
	if r.res.IntentID != "" {
		return r.res.IntentID
	}
	return r.res.ChargeID
}

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

// markPaid records PAID and publishes OrderPaid. Recording PAID can only fail if
// the order's state forbids it, after money moved: the order is refunded. The
// publish retries until Kafka takes it, and the order stays PAID meanwhile.
func (r *run) markPaid(ctx workflow.Context) error {
	if err := r.move(ctx, order.StatusPaid, r.paymentRef()); err != nil {
		return r.refundAndEnd(ctx, order.StatusFailed, activities.EventOrderFailed, "after charge: "+rootMessage(err))
	}
	err := r.publish(ctx, activities.EventOrderPaid, "")
	switch {
	case err != nil && r.beforePayments:
		return r.refundAndEnd(ctx, order.StatusFailed, activities.EventOrderFailed, "after charge: "+rootMessage(err))
	case err != nil:
		return fmt.Errorf("publish %s: %w", activities.EventOrderPaid, err)
	}
	return nil
}

// refundAndEnd is the compensation for a charge that must not stand.
func (r *run) refundAndEnd(ctx workflow.Context, to order.Status, event, reason string) error {
	_, refund := r.paymentPath()
	refundID, err := refund(ctx)
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

// refundInput asks for the refund of the order's charge in full with key.
func (r *run) refundInput(key string) activities.RefundInput {
	return activities.RefundInput{Step: r.step(key), ChargeID: r.res.ChargeID}
}

// end records a final status and publishes its event.
func (r *run) end(ctx workflow.Context, to order.Status, event, reason string) error {
	failure := ""
	if to != order.StatusCancelled {
		failure = reason
	}
	err := r.storeStep(r.orders.Transition, activities.Transition{
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
	if r.publishLocal != nil {
		if err := workflow.ExecuteLocalActivity(r.publishLocal, r.events.Publish, e).Get(ctx, nil); err == nil {
			return nil
		}
	}
	return workflow.ExecuteActivity(r.publishRetry, r.events.Publish, e).Get(ctx, nil)
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
