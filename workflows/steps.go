package workflows

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
)

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
