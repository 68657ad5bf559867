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
)

// noDeadline is a timeout no outage reaches (Temporal has no "never").
const noDeadline = 10 * 365 * 24 * time.Hour

// OrderResult is the order as the workflow sees it; the status query returns it too.
type OrderResult struct {
	OrderID   string
	Status    order.Status
	ChargeID  string
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
	pay          workflow.Context
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
		return stepsBeforePayments(ctx), legacy{beforePayments: true}
	}
	s := currentSteps(ctx)
	if workflow.GetVersion(ctx, changeLocalStore, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return stepsBeforeLocalStore(ctx, s), legacy{}
	}
	if workflow.GetVersion(ctx, changeLocalPublish, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		s.publishLocal = nil
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
	charge := r.charge
	if r.beforePayments {
		charge = r.chargeBeforePayments
	}
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

// chargeInput asks for the order's charge with key.
func (r *run) chargeInput(key string) activities.ChargeInput {
	return activities.ChargeInput{Step: r.step(key), PaymentMethod: r.in.Order.PaymentMethod}
}

// charge charges the order with the key of generation 0 and settles every unknown
// outcome by looking the charge up, never by guessing: found, the order is charged;
// not found after the provider's consistency window, it is charged again with the
// next generation's key. It returns true once charged; otherwise it has ended the
// order after a definite no (decline, refused request) or a cancel.
func (r *run) charge(ctx workflow.Context) (bool, error) {
	for gen := 0; ; {
		r.res.Status = order.StatusPaymentPending
		key := order.PaymentKey(r.in.Order.WorkflowID, "charge", gen)
		var ch activities.ChargeResult
		err := workflow.ExecuteActivity(r.pay, r.payments.Charge, r.chargeInput(key)).Get(ctx, &ch)
		switch errorType(err) {
		case "":
			r.res.ChargeID = ch.ChargeID
			return true, nil
		case activities.ErrCardDeclined:
			return false, r.end(ctx, order.StatusPaymentDeclined, activities.EventOrderPaymentDeclined, "card declined")
		case activities.ErrPaymentRejected:
			return false, r.end(ctx, order.StatusFailed, activities.EventOrderFailed, "charge refused: "+rootMessage(err))
		case activities.ErrProviderUnauthorized, activities.ErrPaymentInFlight:
			if err := workflow.Sleep(ctx, sameKeyRetry); err != nil {
				return false, err
			}
			continue
		}
		found, err := r.lookupPayment(ctx, "", key)
		if err != nil {
			return false, err
		}
		if found.Found {
			r.res.ChargeID = found.ID
			return true, nil
		}
		if r.cancelRequested {
			return false, r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled; the lookup found no charge")
		}
		gen++
	}
}

// lookupPayment asks the provider whether the order was charged (chargeID "") or
// its charge refunded, after the provider's consistency window. A charge's order
// shows PAYMENT_UNKNOWN meanwhile.
func (r *run) lookupPayment(ctx workflow.Context, chargeID, key string) (activities.LookupResult, error) {
	var res activities.LookupResult
	if chargeID == "" {
		if err := r.move(ctx, order.StatusPaymentUnknown, ""); err != nil {
			return res, err
		}
	}
	delay := r.in.LookupDelay
	if delay <= 0 {
		delay = DefaultLookupDelay
	}
	if err := workflow.Sleep(ctx, delay); err != nil {
		return res, err
	}
	err := workflow.ExecuteActivity(r.lookup, r.payments.Lookup, activities.LookupInput{
		OrderID: r.in.Order.ID, ChargeID: chargeID, Key: key,
	}).Get(ctx, &res)
	if err != nil {
		return res, fmt.Errorf("look up %s: %w", key, err)
	}
	return res, nil
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
	if err := r.move(ctx, order.StatusPaid, r.res.ChargeID); err != nil {
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
	refund := r.refund
	if r.beforePayments {
		refund = r.refundBeforePayments
	}
	refundID, err := refund(ctx)
	if err != nil {
		r.res.Failure = reason + "; refund failed: " + rootMessage(err)
		return fmt.Errorf("refund charge %s: %w", r.res.ChargeID, err)
	}
	r.res.RefundID = refundID
	return r.end(ctx, to, event, reason+"; refunded "+refundID)
}

// refundInput asks for the refund of the order's charge in full with key.
func (r *run) refundInput(key string) activities.RefundInput {
	return activities.RefundInput{Step: r.step(key), ChargeID: r.res.ChargeID}
}

// refund refunds the order's charge in full. An unknown outcome is looked up like
// a charge's: found, done; not found, the next generation's key.
func (r *run) refund(ctx workflow.Context) (string, error) {
	for gen := 0; ; {
		in := r.refundInput(order.PaymentKey(r.in.Order.WorkflowID, "refund", gen))
		var re activities.RefundResult
		err := workflow.ExecuteActivity(r.pay, r.payments.Refund, in).Get(ctx, &re)
		kind := errorType(err)
		switch kind {
		case "":
			return re.RefundID, nil
		case activities.ErrProviderUnauthorized, activities.ErrPaymentInFlight:
			if err := workflow.Sleep(ctx, sameKeyRetry); err != nil {
				return "", err
			}
			continue
		}
		found, lerr := r.lookupPayment(ctx, r.res.ChargeID, in.Key)
		switch {
		case lerr != nil:
			return "", lerr
		case found.Found:
			return found.ID, nil
		case kind == activities.ErrPaymentRejected || kind == activities.ErrCardDeclined:
			return "", err // a definite no, and no refund exists
		}
		gen++
	}
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
		PaymentRef: r.res.ChargeID, Reason: reason, OccurredAt: workflow.Now(ctx).UTC(),
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
