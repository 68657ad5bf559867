package workflows

import (
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
			backoff(time.Second, 30*time.Second, activities.ErrCardDeclined, activities.ErrPaymentRejected)),
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
	if err := workflow.ExecuteActivity(r.pay, r.payments.Charge, r.chargeInput("")).Get(ctx, &ch); err != nil {
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
	err := workflow.ExecuteActivity(r.pay, r.payments.Refund, r.refundInput("")).Get(ctx, &re)
	return re.RefundID, err
}
