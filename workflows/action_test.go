package workflows

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
)

// customer is a simulated provider whose intent waits on its customer from the
// confirm until the customer acts at a time on the test suite's clock.
type customer struct {
	mu        sync.Mutex
	start     time.Time
	actsAfter time.Duration // when the customer authenticates (or fails to); 0: never
	outcome   activities.IntentState
	abandons  int
	reads     int
	paidAt    time.Duration // when the order was recorded PAID, from start
}

func (c *customer) state(now time.Time) activities.IntentState {
	if c.actsAfter > 0 && now.Sub(c.start) >= c.actsAfter {
		return c.outcome
	}
	return state(activities.IntentRequiresAction)
}

// actionEnv runs an order whose confirm answers requires_action against c, with the
// server's unlimited attempts.
func actionEnv(t *testing.T, c *customer) *env {
	t.Helper()
	e := newEnv(t)
	e.SetTestTimeout(2 * time.Minute)
	e.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: deadlockAfter, Interceptors: []interceptor.WorkerInterceptor{&serverAttempts{}}})
	c.start = time.Now() // activities' deadlines are on the real clock: never start in the past
	e.SetStartTime(c.start)
	read := func() activities.IntentState {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.reads++
		return c.state(e.Now())
	}
	e.OnActivity(e.payments.AwaitIntent, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.RetrieveInput) (activities.IntentState, error) {
			st := read()
			if waiting(st.Status) {
				return st, temporal.NewApplicationError("pending", activities.ErrIntentPending)
			}
			return st, nil
		})
	e.OnActivity(e.payments.RetrieveIntent, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.RetrieveInput) (activities.IntentState, error) { return read(), nil })
	e.OnActivity(e.payments.AbandonIntent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.AbandonInput) (activities.IntentState, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.abandons++
			if (in.CancelKey != order.PaymentKey(testWorkflowID, "abandon", 0) && in.CancelKey != order.PaymentKey(testWorkflowID, "close", 0)) ||
				in.Key != keys("confirm", 0)[0] {
				t.Errorf("abandon %+v", in)
			}
			st := c.state(e.Now())
			if st.Status == activities.IntentRequiresAction || st.Status == activities.IntentRequiresPaymentMethod {
				return state(activities.IntentCanceled), nil
			}
			return st, nil // the provider refuses to cancel: the intent says what happened
		})
	e.f.onMove = func(to order.Status) {
		if to == order.StatusPaid {
			c.paidAt = e.Now().Sub(c.start)
		}
	}
	e.onIntents(nil, []answer{{st: state(activities.IntentRequiresAction)}}, nil)
	return e
}

func (e *env) signalAt(after time.Duration) {
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(SignalIntentChanged, "pi_1") }, after)
}

// The customer authenticates at 40 s and the webhook's wake-up comes a second
// later: the order is PAID then, not at the poll's next read (75 s).
func TestAuthenticatedCustomerIsPaidOnTheWebhook(t *testing.T) {
	c := &customer{actsAfter: 40 * time.Second, outcome: succeeded().st}
	e := actionEnv(t, c)
	e.signalAt(41 * time.Second)
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaid || res.ChargeID != "ch_1" {
		t.Fatalf("result %+v", res)
	}
	if !slices.Contains(e.statuses(), order.StatusActionRequired) {
		t.Fatalf("statuses %v: never PAYMENT_ACTION_REQUIRED", e.statuses())
	}
	if c.paidAt < 40*time.Second || c.paidAt > 45*time.Second {
		t.Fatalf("paid at %s, want just after the webhook at 41s", c.paidAt)
	}
	if tr := e.f.transitions; !hasRef(tr, "pi_1") {
		t.Fatalf("PAYMENT_ACTION_REQUIRED recorded without the intent: %+v", tr)
	}
}

func hasRef(trs []activities.Transition, ref string) bool {
	for _, tr := range trs {
		if tr.To == order.StatusActionRequired && tr.PaymentRef == ref {
			return true
		}
	}
	return false
}

// With the webhook endpoint down for 10 minutes (no wake-up at all), customers who
// authenticate at any moment of it are paid by the fallback poll within its
// interval.
func TestWebhooksDownForTenMinutesSettleByThePoll(t *testing.T) {
	for _, at := range []time.Duration{20 * time.Second, 3 * time.Minute, 9*time.Minute + 30*time.Second} {
		c := &customer{actsAfter: at, outcome: succeeded().st}
		e := actionEnv(t, c)
		e.execute(placeOrder())
		if res := e.result(t); res.Status != order.StatusPaid {
			t.Fatalf("authenticated at %s: %+v", at, res)
		}
		if c.paidAt < at || c.paidAt > at+DefaultIntentPoll+time.Second {
			t.Fatalf("authenticated at %s, paid at %s: over the poll's %s", at, c.paidAt, DefaultIntentPoll)
		}
		t.Logf("authenticated at %s, paid at %s by the poll alone (%d reads)", at, c.paidAt, c.reads)
	}
}

// A customer who never authenticates: the intent is cancelled at the timeout and
// the order ends CANCELLED, nothing charged.
func TestAbandonedAuthenticationCancelsAtTheTimeout(t *testing.T) {
	c := &customer{}
	e := actionEnv(t, c)
	in := placeOrder()
	in.ActionTimeout = 30 * time.Minute
	e.execute(in)
	res := e.result(t)
	if res.Status != order.StatusCancelled || res.ChargeID != "" || c.abandons != 1 {
		t.Fatalf("result %+v after %d abandons", res, c.abandons)
	}
	if got := e.f.eventTypes(); got[len(got)-1] != activities.EventOrderCancelled {
		t.Fatalf("events %v", got)
	}
	if d := e.Now().Sub(c.start); d < 30*time.Minute || d > 31*time.Minute {
		t.Fatalf("ended after %s, want the 30m timeout", d)
	}
}

// The customer authenticates just as the timeout fires: the provider refuses the
// cancel, and the intent, read back, says succeeded: PAID, never CANCELLED.
func TestAuthenticatedAsTheTimeoutFiresIsPaid(t *testing.T) {
	c := &customer{actsAfter: time.Hour, outcome: succeeded().st}
	e := actionEnv(t, c)
	e.execute(placeOrder()) // the default timeout: an hour
	if res := e.result(t); res.Status != order.StatusPaid || c.abandons != 1 {
		t.Fatalf("result %+v after %d abandons", res, c.abandons)
	}
}

// Failed authentication: the intent needs another payment method, the order is
// declined.
func TestFailedAuthenticationDeclines(t *testing.T) {
	failed := state(activities.IntentRequiresPaymentMethod)
	failed.Declined = activities.AuthenticationFailed
	c := &customer{actsAfter: 10 * time.Second, outcome: failed}
	e := actionEnv(t, c)
	e.signalAt(11 * time.Second)
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaymentDeclined || res.ChargeID != "" {
		t.Fatalf("result %+v", res)
	}
}

// A cancel while the order waits on its customer cancels the intent at once.
func TestCancelWhileWaitingOnTheCustomer(t *testing.T) {
	c := &customer{}
	e := actionEnv(t, c)
	var got OrderResult
	var uerr error
	e.cancelAt(t, 30*time.Second, func(res OrderResult, err error) { got, uerr = res, err })
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusCancelled || c.abandons != 1 || uerr != nil || got.Status != order.StatusCancelled {
		t.Fatalf("result %+v, update %+v %v, %d abandons", res, got, uerr, c.abandons)
	}
	if d := e.Now().Sub(c.start); d > time.Minute {
		t.Fatalf("cancelled after %s", d)
	}
}

// A flood of wake-ups (every webhook of the intent, duplicated) costs at most
// maxWakes reads; the order still settles, by the poll.
func TestWakeUpsAreBounded(t *testing.T) {
	c := &customer{actsAfter: 20 * time.Minute, outcome: succeeded().st}
	e := actionEnv(t, c)
	for i := range 500 {
		e.signalAt(time.Duration(i+1) * time.Second)
	}
	h := watchHistory(e)
	e.execute(placeOrder())
	t.Logf("500 wake-ups: %d activities, %d reads", len(h.activities), c.reads)
	if res := e.result(t); res.Status != order.StatusPaid {
		t.Fatalf("result %+v", res)
	}
	if e.f.status != order.StatusPaid || c.paidAt > 21*time.Minute {
		t.Fatalf("paid at %s", c.paidAt)
	}
	// Each acted-on wake-up is one read activity and one abandoned poll.
	if n := len(h.activities); n > 2*maxWakes+10 {
		t.Fatalf("%d activities for 500 wake-ups", n)
	}
}
