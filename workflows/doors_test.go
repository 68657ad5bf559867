package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
)

// A declined order closes its intent before it says PAYMENT_DECLINED, so the
// customer's "try another card" through the client secret cannot charge it.
func TestDeclineClosesTheIntent(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{{err: typed(activities.ErrCardDeclined)}}, nil)
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaymentDeclined || !equal(rec.closes, keys("close", 0)) {
		t.Fatalf("result %+v after closes %v, want PAYMENT_DECLINED after one close", res, rec.closes)
	}
	if got := e.f.eventTypes(); !equal(got, []string{activities.EventOrderPaymentDeclined}) {
		t.Fatalf("events %v", got)
	}
}

// The customer paid with another card before the close reached the intent: the
// provider refuses to cancel it, and the order is PAID, not declined.
func TestDeclinedThenPaidWithAnotherCardIsPaid(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{{err: typed(activities.ErrCardDeclined)}}, []activities.IntentState{succeeded().st})
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaid || res.ChargeID != "ch_1" || len(rec.closes) != 1 || len(rec.refunds) != 0 {
		t.Fatalf("result %+v after closes %v, refunds %d", res, rec.closes, len(rec.refunds))
	}
}

// A reset replays the payment of an order paid two hours ago with a one-hour
// cancel window: the window stays closed, and a cancel refunds nothing.
func TestResetNeverReopensTheCancelWindow(t *testing.T) {
	e := newEnv(t)
	rec := e.paid()
	paid := e.Now().Add(-2 * time.Hour)
	e.f.paidAt, e.f.status = &paid, order.StatusPaid
	in := placeOrder()
	in.CancelWindow = time.Hour
	var got OrderResult
	var uerr error
	e.cancelAt(t, 0, func(r OrderResult, err error) { got, uerr = r, err })
	e.execute(in)
	res := e.result(t)
	if res.Status != order.StatusPaid || !res.Fulfilled || len(rec.refunds) != 0 {
		t.Fatalf("result %+v after %d refunds, want PAID, fulfilled, none", res, len(rec.refunds))
	}
	if uerr == nil && got.Status == order.StatusCancelled {
		t.Fatalf("the cancel answered %+v", got)
	}

	// Paid 20 minutes before: 40 left, and a cancel then refunds.
	e = newEnv(t)
	e.paid()
	paid = e.Now().Add(-20 * time.Minute)
	e.f.paidAt, e.f.status = &paid, order.StatusPaid
	start := e.Now()
	e.execute(in)
	if res := e.result(t); !res.Fulfilled || e.Now().Sub(start) > 41*time.Minute || e.Now().Sub(start) < 39*time.Minute {
		t.Fatalf("fulfilled after %s: %+v, want the 40 minutes left", e.Now().Sub(start), res)
	}
}

// An operator cancels the workflow while the provider confirms slowly: the run
// closes the intent, which charged meanwhile, refunds it and ends the order
// CANCELLED before it ends cancelled.
func TestWorkflowCancelCompensates(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{{err: typed(activities.ErrPaymentInFlight)}},
		[]activities.IntentState{state(activities.IntentProcessing), state(activities.IntentProcessing), state(activities.IntentProcessing), succeeded().st})
	e.RegisterDelayedCallback(e.CancelWorkflow, 8*time.Second)
	e.execute(placeOrder())
	if !e.IsWorkflowCompleted() || !temporal.IsCanceledError(e.GetWorkflowError()) {
		t.Fatalf("workflow ended with %v", e.GetWorkflowError())
	}
	if e.f.status != order.StatusCancelled || len(rec.closes) != 1 || len(rec.refunds) != 1 {
		t.Fatalf("order %s after closes %v and %d refunds", e.f.status, rec.closes, len(rec.refunds))
	}

	// Cancelled before the intent's creation answered: the ledger names the intent.
	e = newEnv(t)
	e.OnActivity(e.payments.PayIntent, mock.Anything, mock.Anything).After(time.Minute).Return(activities.PayResult{}, nil)
	rec = e.onIntents(nil, []answer{{err: typed(activities.ErrPaymentInFlight)}}, []activities.IntentState{state(activities.IntentRequiresConfirmation)})
	e.OnActivity(e.payments.OrderIntent, mock.Anything, mock.Anything).Return("pi_1", nil)
	e.RegisterDelayedCallback(e.CancelWorkflow, time.Second)
	e.execute(placeOrder())
	if e.f.status != order.StatusCancelled || len(rec.closes) != 1 || len(rec.refunds) != 0 {
		t.Fatalf("order %s after closes %v and %d refunds", e.f.status, rec.closes, len(rec.refunds))
	}
}

// recovering is the run the reconciler starts for an order whose workflow closed
// while its intent was as intent.
func recovering(intent string) PlaceOrder {
	in := placeOrder()
	in.Resume = &Resume{Recover: true, Result: OrderResult{OrderID: in.Order.ID, Status: order.StatusPaymentPending, IntentID: intent}}
	return in
}

// A recovery run never creates or confirms: it reads the intent and follows it.
func TestRecoveryFollowsTheIntent(t *testing.T) {
	for _, c := range []struct {
		name   string
		reads  []activities.IntentState
		intent string
		want   order.Status
		closes int
	}{
		{"succeeded", []activities.IntentState{succeeded().st}, "pi_1", order.StatusPaid, 0},
		{"processing, then succeeded", []activities.IntentState{state(activities.IntentProcessing), state(activities.IntentProcessing), succeeded().st}, "pi_1", order.StatusPaid, 0},
		{"never confirmed", []activities.IntentState{state(activities.IntentRequiresConfirmation)}, "pi_1", order.StatusCancelled, 1},
		{"no intent", nil, "", order.StatusCancelled, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.f.status = order.StatusPaymentPending
			rec := e.onIntents(nil, []answer{succeeded()}, c.reads)
			e.OnActivity(e.payments.RetrieveIntent, mock.Anything, mock.Anything).Return(
				func(_ context.Context, in activities.RetrieveInput) (activities.IntentState, error) {
					rec.retrieves = append(rec.retrieves, in.Key)
					return c.reads[0], nil
				}).Maybe()
			e.execute(recovering(c.intent))
			res := e.result(t)
			if res.Status != c.want || len(rec.creates) != 0 || len(rec.confirms) != 0 || len(rec.closes) != c.closes || len(rec.refunds) != 0 {
				t.Fatalf("result %+v after creates %v, confirms %v, closes %v, %d refunds", res, rec.creates, rec.confirms, rec.closes, len(rec.refunds))
			}
		})
	}
}

// A cancel while the intent was never confirmed closes the intent before the
// order ends CANCELLED: no confirm can charge it later.
func TestCancelledBeforeTheConfirmClosesTheIntent(t *testing.T) {
	e := newEnv(t)
	e.OnActivity(e.payments.PayIntent, mock.Anything, mock.Anything).After(30*time.Second).
		Return(activities.PayResult{IntentID: "pi_1", State: state(activities.IntentRequiresConfirmation)}, nil)
	rec := e.onIntents(nil, []answer{succeeded()}, nil)
	var got OrderResult
	e.cancelAt(t, time.Second, func(r OrderResult, _ error) { got = r })
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusCancelled || !equal(rec.closes, keys("close", 0)) || len(rec.confirms) != 0 {
		t.Fatalf("result %+v after closes %v, confirms %v", res, rec.closes, rec.confirms)
	}
	if got.Status != order.StatusCancelled {
		t.Fatalf("the cancel answered %+v", got)
	}
}
