package workflows

import (
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/orderflow/orderflow/orders/order"
)

// settleAt sends UpdateSettled after a pause and records its answer and when it came.
func (e *env) settleAt(t *testing.T, after time.Duration, got *OrderResult, at *time.Duration) {
	start := e.Now()
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(UpdateSettled, "settled-1", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { t.Errorf("settled rejected: %v", err) },
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("settled: %v", err)
				}
				*got, _ = v.(OrderResult)
				*at = e.Now().Sub(start)
			},
		})
	}, after)
}

// With a ten-minute cancel window the workflow runs on after the order is paid:
// the settled update answers PAID at once, not when the workflow ends.
func TestSettledAnswersWhenPaidNotWhenTheWorkflowEnds(t *testing.T) {
	e := newEnv(t)
	e.onIntents(nil, []answer{succeeded()}, nil)
	var got OrderResult
	var at time.Duration
	e.settleAt(t, 0, &got, &at)
	in := placeOrder()
	in.CancelWindow = 10 * time.Minute
	start := e.Now()
	e.execute(in)
	if res := e.result(t); !res.Fulfilled || e.Now().Sub(start) < 10*time.Minute {
		t.Fatalf("the workflow ended after %s: %+v", e.Now().Sub(start), res)
	}
	if got.Status != order.StatusPaid || got.Fulfilled || at > time.Second {
		t.Fatalf("settled answered %+v after %s, want PAID at once", got, at)
	}
}

// An order waiting on its customer answers the waiting client with where to send
// them, not after the customer acts.
func TestSettledAnswersAnOrderWaitingOnItsCustomer(t *testing.T) {
	c := &customer{actsAfter: 20 * time.Minute, outcome: succeeded().st}
	e := actionEnv(t, c)
	var got OrderResult
	var at time.Duration
	e.settleAt(t, 0, &got, &at)
	e.execute(placeOrder())
	if got.Status != order.StatusActionRequired || got.IntentID != "pi_1" || at > time.Minute {
		t.Fatalf("settled answered %+v after %s", got, at)
	}
	if res := e.result(t); res.Status != order.StatusPaid {
		t.Fatalf("result %+v", res)
	}
}
