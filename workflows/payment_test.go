package workflows

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
)

// intents records what the workflow asked of the PaymentIntent activities, and
// answers the n-th call with the n-th answer (the last repeats).
type intents struct {
	creates, confirms, retrieves []string // keys
	closes                       []string // the intent's cancels, by key
	refunds                      []activities.RefundIntentInput
	sweeps                       []activities.SweepInput
}

type answer struct {
	st  activities.IntentState
	err error
}

func typed(kind string) error { return temporal.NewNonRetryableApplicationError(kind, kind, nil) }

func succeeded() answer {
	return answer{st: activities.IntentState{IntentID: "pi_1", Status: activities.IntentSucceeded, ChargeID: "ch_1"}}
}

func state(status string) activities.IntentState {
	return activities.IntentState{IntentID: "pi_1", Status: status}
}

// onIntents mocks the intent activities: creates answer errors (nil: pi_1),
// confirms and retrieves answer in order, refunds answer refundErrs then re_1.
func (e *env) onIntents(creates []error, confirms []answer, retrieves []activities.IntentState, refundErrs ...error) *intents {
	f, rec := e.f, &intents{}
	nth := func(n, of int) int { return min(n, of) - 1 }
	e.onCreate(func(_ context.Context, in activities.IntentInput) (activities.IntentResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		rec.creates = append(rec.creates, in.Key)
		if len(creates) > 0 {
			if err := creates[nth(len(rec.creates), len(creates))]; err != nil {
				return activities.IntentResult{}, err
			}
		}
		return activities.IntentResult{Key: in.Key, IntentID: "pi_1"}, nil
	})
	e.onConfirm(func(_ context.Context, in activities.ConfirmInput) (activities.IntentState, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		rec.confirms = append(rec.confirms, in.Key)
		if order.CanMove(f.status, order.StatusPaymentPending) {
			f.status = order.StatusPaymentPending
		}
		a := confirms[nth(len(rec.confirms), len(confirms))]
		return a.st, a.err
	})
	e.OnActivity(e.payments.RetrieveIntent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RetrieveInput) (activities.IntentState, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			rec.retrieves = append(rec.retrieves, in.Key)
			return retrieves[nth(len(rec.retrieves), len(retrieves))], nil
		}).Maybe()
	// As the activity does: each attempt one read, retried while it is pending.
	e.OnActivity(e.payments.AwaitIntent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RetrieveInput) (activities.IntentState, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			rec.retrieves = append(rec.retrieves, in.Key)
			st := retrieves[nth(len(rec.retrieves), len(retrieves))]
			if st.Status == activities.IntentProcessing || st.Status == activities.IntentRequiresAction {
				return st, temporal.NewApplicationError("pending", activities.ErrIntentPending)
			}
			return st, nil
		}).Maybe()
	e.OnActivity(e.payments.RefundIntent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RefundIntentInput) (activities.RefundResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			rec.refunds = append(rec.refunds, in)
			if n := len(rec.refunds); n <= len(refundErrs) {
				return activities.RefundResult{}, refundErrs[n-1]
			}
			return activities.RefundResult{Key: in.Key, RefundID: "re_1"}, nil
		}).Maybe()
	// A close cancels an intent that needs a payment method or a confirm; the
	// provider refuses any other, and the intent as it stands is the answer.
	e.OnActivity(e.payments.AbandonIntent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.AbandonInput) (activities.IntentState, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			rec.closes = append(rec.closes, in.CancelKey)
			st := state(activities.IntentCanceled)
			if n := len(retrieves); n > 0 {
				st = retrieves[min(len(rec.retrieves), n-1)]
			}
			if st.Status == activities.IntentRequiresPaymentMethod || st.Status == activities.IntentRequiresConfirmation {
				st = state(activities.IntentCanceled)
			}
			return st, nil
		}).Maybe()
	e.OnActivity(e.payments.CancelOrphanIntents, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SweepInput) (int, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			rec.sweeps = append(rec.sweeps, in)
			return 1, nil
		}).Maybe()
	return rec
}

func keys(op string, gens ...int) []string {
	var out []string
	for _, g := range gens {
		out = append(out, order.PaymentKey(testWorkflowID, op, g))
	}
	return out
}

func TestIntentPaidOnce(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{succeeded()}, nil)
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaid || res.IntentID != "pi_1" || res.ChargeID != "ch_1" || !res.Fulfilled {
		t.Fatalf("result = %+v", res)
	}
	if !equal(rec.creates, keys("intent", 0)) || !equal(rec.confirms, keys("confirm", 0)) || len(rec.retrieves) != 0 || len(rec.sweeps) != 0 {
		t.Fatalf("creates %v, confirms %v, %d retrieves, %d sweeps", rec.creates, rec.confirms, len(rec.retrieves), len(rec.sweeps))
	}
	if last := e.f.transitions[len(e.f.transitions)-1]; last.To != order.StatusPaid || last.PaymentRef != "pi_1" {
		t.Fatalf("last transition = %+v, want PAID with the intent as its reference", last)
	}
}

// An order creates and confirms its intent in one activity task.
func TestIntentPaidInOneActivity(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{succeeded()}, nil)
	var started []string
	e.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		started = append(started, info.ActivityType.Name)
	})
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaid || !slices.Equal(started, []string{"PayIntent"}) ||
		!equal(rec.creates, keys("intent", 0)) || !equal(rec.confirms, keys("confirm", 0)) {
		t.Fatalf("%+v after activities %v (creates %v, confirms %v); want PAID after PayIntent alone",
			res, started, rec.creates, rec.confirms)
	}
}

func TestIntentDeclined(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{{err: typed(activities.ErrCardDeclined)}}, nil)
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaymentDeclined || len(rec.refunds) != 0 {
		t.Fatalf("result = %+v", res)
	}
}

// A provider slower than the client: the confirm's key is in use, so the workflow
// reads the intent, which is processing, until it succeeds. One confirm key, no
// second confirm, whatever the delay.
func TestSlowConfirmIsReadBackNeverResent(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{{err: typed(activities.ErrPaymentInFlight)}},
		[]activities.IntentState{state(activities.IntentProcessing), state(activities.IntentProcessing),
			{IntentID: "pi_1", Status: activities.IntentSucceeded, ChargeID: "ch_9"}})
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaid || res.ChargeID != "ch_9" {
		t.Fatalf("result = %+v", res)
	}
	if !equal(rec.confirms, keys("confirm", 0)) || !equal(rec.retrieves, keys("confirm", 0, 0, 0)) {
		t.Fatalf("confirms %v, retrieves %v", rec.confirms, rec.retrieves)
	}
	if got := e.statuses(); len(got) != 1 || got[0] != order.StatusPaid {
		t.Fatalf("transitions %v: a key in use is not an unknown outcome", got)
	}
}

// A saved 500 on the confirm: the order shows PAYMENT_UNKNOWN while the intent is
// read. Charged: PAID. Never confirmed: confirmed again with the next key.
func TestUnknownConfirmSettledByTheIntent(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{{err: typed(activities.ErrPaymentUnknown)}}, []activities.IntentState{succeeded().st})
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaid || len(rec.confirms) != 1 {
		t.Fatalf("charged, answer lost: %+v after confirms %v", res, rec.confirms)
	}
	if got := e.statuses(); len(got) != 2 || got[0] != order.StatusPaymentUnknown || got[1] != order.StatusPaid {
		t.Fatalf("transitions %v, want PAYMENT_UNKNOWN then PAID", got)
	}

	e = newEnv(t)
	rec = e.onIntents(nil, []answer{{err: typed(activities.ErrPaymentUnknown)}, succeeded()},
		[]activities.IntentState{state(activities.IntentRequiresConfirmation)})
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaid || !equal(rec.confirms, keys("confirm", 0, 1)) {
		t.Fatalf("never confirmed: %+v after confirms %v", res, rec.confirms)
	}
}

// A creation whose answer is lost for good: the next key creates the intent that
// is confirmed; the unrecorded one is swept once the order settled.
func TestLostCreationIsNeverConfirmedAndIsSwept(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents([]error{typed(activities.ErrPaymentUnknown), nil}, []answer{succeeded()}, nil)
	in := placeOrder()
	in.LookupDelay = 30 * time.Second
	e.execute(in)
	if res := e.result(t); res.Status != order.StatusPaid {
		t.Fatalf("result = %+v", res)
	}
	if !equal(rec.creates, keys("intent", 0, 1)) || len(rec.confirms) != 1 || len(rec.sweeps) != 1 || rec.sweeps[0].Keep != "pi_1" {
		t.Fatalf("creates %v, confirms %v, sweeps %+v", rec.creates, rec.confirms, rec.sweeps)
	}
}

// A cancel after payment refunds the intent; a refund the provider refuses (someone
// refunded part of it meanwhile) is tried with the next key, which refunds what is
// left.
func TestCancelRefundsTheIntent(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{succeeded()}, nil, typed(activities.ErrPaymentRejected))
	in := placeOrder()
	in.CancelWindow = time.Hour
	var got OrderResult
	var uerr error
	e.cancelAt(t, time.Minute, func(r OrderResult, err error) { got, uerr = r, err })
	e.execute(in)
	if uerr != nil || got.Status != order.StatusCancelled || got.RefundID != "re_1" {
		t.Fatalf("cancel = %+v, %v", got, uerr)
	}
	if len(rec.refunds) != 2 || rec.refunds[0].Key != keys("refund", 0)[0] || rec.refunds[1].Key != keys("refund", 1)[0] || rec.refunds[1].IntentID != "pi_1" {
		t.Fatalf("refunds = %+v", rec.refunds)
	}
	if err := e.GetWorkflowError(); err != nil && !errors.Is(err, nil) {
		t.Fatalf("workflow error: %v", err)
	}
}
