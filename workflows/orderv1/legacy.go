package orderv1

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/internal/order"
)

// This file holds what exists only for runs started before a versioned change
// (order.go lists them): their replay must issue the same commands as when they
// were recorded. New behaviour goes into order.go, never here.

// legacy is what a run predates beyond its steps' options.
type legacy struct {
	// beforePayments: the charge and the refund use the workflow-ID keys
	// (order.LegacyPaymentKey) with no lookup, and a failed OrderPaid publish
	// refunds.
	beforePayments bool
	// beforeIntents: the order is paid through the Charges API, its unknown
	// outcomes looked up by search after the provider's consistency window.
	beforeIntents bool
	// beforeBoundedHistory: refused credentials, a key in use and a processing
	// intent are waited out with workflow timers, the store retries locally
	// without end, and the run never continues as new.
	beforeBoundedHistory bool
	// beforeCustomerAction: an intent that waits on its customer is read on a
	// backoff without end, like a processing one; no webhook wakes it, no timeout
	// cancels it, and the order shows PAYMENT_PENDING meanwhile.
	beforeCustomerAction bool
	// beforeOneCall: the intent is created and confirmed by two activities.
	beforeOneCall bool
}

// stepsBeforeBoundedHistory are the options of runs started before
// changeBoundedHistory: s with the PaymentIntent calls typed for the workflow's
// own waits, and the store local without a deadline.
func stepsBeforeBoundedHistory(ctx workflow.Context, s steps) steps {
	s.intent = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    5 * time.Second,
		RetryPolicy: retryForever(30*time.Second, activities.ErrCardDeclined, activities.ErrPaymentRejected,
			activities.ErrPaymentUnknown, activities.ErrProviderUnauthorized, activities.ErrPaymentInFlight),
	})
	s.confirm = s.intent
	s.store = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: noDeadline,
		StartToCloseTimeout:    10 * time.Second,
		RetryPolicy:            retryForever(30*time.Second, activities.ErrInvalidTransition),
	})
	s.storeRetry, s.poll = nil, nil
	return s
}

// stepsBeforePayments are the options of runs started before changePayments:
// every step has a deadline, and the charge retries with backoff for an hour.
func stepsBeforePayments(ctx workflow.Context) steps {
	backoff := func(initial, max time.Duration, nonRetryable ...string) *temporal.RetryPolicy {
		return &temporal.RetryPolicy{InitialInterval: initial, BackoffCoefficient: 2,
			MaximumInterval: max, NonRetryableErrorTypes: nonRetryable}
	}
	regular := func(startToClose, heartbeat, scheduleToClose time.Duration, retry *temporal.RetryPolicy) workflow.Context {
		return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: startToClose,
			HeartbeatTimeout: heartbeat, ScheduleToCloseTimeout: scheduleToClose, RetryPolicy: retry})
	}
	return steps{
		storeRegular: true,
		store:        regular(10*time.Second, 0, 10*time.Minute, backoff(200*time.Millisecond, 10*time.Second, activities.ErrInvalidTransition)),
		pay: regular(30*time.Second, 5*time.Second, time.Hour,
			backoff(time.Second, 30*time.Second, activities.ErrCardDeclined, activities.ErrPaymentRejected,
				activities.ErrProviderUnauthorized)),
		publishRetry: regular(15*time.Second, 5*time.Second, 10*time.Minute, backoff(500*time.Millisecond, 15*time.Second)),
	}
}

// stepsBeforeLocalStore are the options of runs started between changePayments
// and changeLocalStore: the current ones, with the Postgres steps as regular
// activities and no local publish.
func stepsBeforeLocalStore(ctx workflow.Context, s steps) steps {
	s.storeRegular, s.publishLocal = true, nil
	s.store = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         retryForever(30*time.Second, activities.ErrInvalidTransition),
	})
	return s
}

// chargeBeforePayments is the charge of runs started before changePayments: any
// failure but a decline ends the order FAILED.
func (r *run) chargeBeforePayments(ctx workflow.Context) (bool, error) {
	r.res.Status = order.StatusPaymentPending
	var ch activities.ChargeResult
	if err := workflow.ExecuteActivity(r.pay, r.charges.Charge, r.chargeInput("")).Get(ctx, &ch); err != nil {
		to, event, reason := order.StatusFailed, activities.EventOrderFailed, "charge failed: "+rootMessage(err)
		if errorType(err) == activities.ErrCardDeclined {
			to, event, reason = order.StatusPaymentDeclined, activities.EventOrderPaymentDeclined, "card declined"
		}
		return false, r.end(ctx, to, event, reason)
	}
	r.res.ChargeID = ch.ChargeID
	return true, nil
}

// refundBeforePayments is the refund of runs started before changePayments: one
// activity with its retries, no lookup.
func (r *run) refundBeforePayments(ctx workflow.Context) (string, error) {
	var re activities.RefundResult
	err := workflow.ExecuteActivity(r.pay, r.charges.Refund, r.refundInput("")).Get(ctx, &re)
	return re.RefundID, err
}

// chargeBeforeIntents charges the order (runs before changeIntents) with the key of
// generation 0 and settles every unknown
// outcome by looking the charge up, never by guessing: found, the order is charged;
// not found after the provider's consistency window, it is charged again with the
// next generation's key. It returns true once charged; otherwise it has ended the
// order after a definite no (decline, refused request) or a cancel.
func (r *run) chargeBeforeIntents(ctx workflow.Context) (bool, error) {
	for gen := 0; ; {
		r.res.Status = order.StatusPaymentPending
		key := order.PaymentKey(r.in.Order.WorkflowID, "charge", gen)
		var ch activities.ChargeResult
		err := workflow.ExecuteActivity(r.pay, r.charges.Charge, r.chargeInput(key)).Get(ctx, &ch)
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
		found, err := r.lookupCharge(ctx, "", key)
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

// lookupCharge asks the provider whether the order was charged (chargeID "") or
// its charge refunded, after the provider's consistency window. A charge's order
// shows PAYMENT_UNKNOWN meanwhile.
func (r *run) lookupCharge(ctx workflow.Context, chargeID, key string) (activities.LookupResult, error) {
	var res activities.LookupResult
	if chargeID == "" {
		if err := r.move(ctx, order.StatusPaymentUnknown, ""); err != nil {
			return res, err
		}
	}
	if err := workflow.Sleep(ctx, r.lookupDelay()); err != nil {
		return res, err
	}
	err := workflow.ExecuteActivity(r.lookup, r.charges.Lookup, activities.LookupInput{
		OrderID: r.in.Order.ID, ChargeID: chargeID, Key: key, Amount: r.in.Order.Amount,
	}).Get(ctx, &res)
	if err != nil {
		return res, fmt.Errorf("look up %s: %w", key, err)
	}
	return res, nil
}

// refundBeforeIntents refunds the order's charge in full (runs before
// changeIntents). An unknown outcome is looked up like
// a charge's: found, done; not found, the next generation's key.
func (r *run) refundBeforeIntents(ctx workflow.Context) (string, error) {
	for gen := 0; ; {
		in := r.refundInput(order.PaymentKey(r.in.Order.WorkflowID, "refund", gen))
		var re activities.RefundResult
		err := workflow.ExecuteActivity(r.pay, r.charges.Refund, in).Get(ctx, &re)
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
		found, lerr := r.lookupCharge(ctx, r.res.ChargeID, in.Key)
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
