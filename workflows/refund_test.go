package workflows

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/platform/identity"
)

const testRefundWorkflowID = "refund:acme:http:r-1"

// refundEnv runs Refund against fakes of its activities; the refund's row is
// the fakes' state, as the refunds table would keep it.
type refundEnv struct {
	*testsuite.TestWorkflowEnvironment
	t         *testing.T
	payments  *activities.Payments
	events    *activities.Events
	mu        sync.Mutex
	recorded  int
	gens      []int // the generations sent, in order
	published []activities.Event
	followed  []string // the follow runs started
}

func newRefundEnv(t *testing.T) *refundEnv {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	e := &refundEnv{
		TestWorkflowEnvironment: s.NewTestWorkflowEnvironment(),
		t:                       t,
		payments:                activities.NewPayments(nil, nil, activities.PaymentMetrics{}),
		events:                  activities.NewEvents(nil, nil),
	}
	e.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testRefundWorkflowID})
	e.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: deadlockAfter})
	e.RegisterWorkflow(Refund)
	e.RegisterWorkflow(FollowPayment)
	e.RegisterActivity(e.payments)
	e.RegisterActivity(e.events)
	return e
}

func testRefund(amount int64) refund.Refund {
	return refund.Refund{ID: refund.IDFor(testRefundWorkflowID), Tenant: "acme", WorkflowID: testRefundWorkflowID,
		OrderID: order.IDFor(testWorkflowID), Amount: amount}
}

// reserved is ReserveRefund's answer for a paid order of 1299.
func reserved(status refund.Status, amount int64, failure string) activities.Reservation {
	return activities.Reservation{Status: status, Amount: amount, Failure: failure, IntentID: "pi_1",
		Order: order.Order{ID: order.IDFor(testWorkflowID), Tenant: "acme", WorkflowID: testWorkflowID, Amount: 1299, Currency: "USD"}}
}

// run executes the workflow with reserve's answer and send answering each
// generation; the recording fakes are registered last, so a test's own take
// precedence.
func (e *refundEnv) run(r refund.Refund, reserve activities.Reservation, send func(gen, attempt int) (activities.Reservation, error)) RefundResult {
	e.t.Helper()
	e.OnActivity(e.payments.RecordRefund, mock.Anything, mock.Anything).Return(func(_ context.Context, got refund.Refund) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		if got.ID != r.ID || got.WorkflowID != testRefundWorkflowID {
			e.t.Errorf("recorded %+v", got)
		}
		e.recorded++
		return nil
	}).Maybe()
	e.OnActivity(e.payments.ReserveRefund, mock.Anything, mock.Anything).Return(reserve, nil).Maybe()
	attempts := map[int]int{}
	e.OnActivity(e.payments.SendRefund, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SendInput) (activities.Reservation, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			if in.IntentID != "pi_1" || in.Currency != "USD" || in.Refund.ID != r.ID {
				e.t.Errorf("send %+v", in)
			}
			e.gens = append(e.gens, in.Gen)
			attempts[in.Gen]++
			return send(in.Gen, attempts[in.Gen])
		}).Maybe()
	e.OnActivity(e.events.Publish, mock.Anything, mock.Anything).Return(func(_ context.Context, ev activities.Event) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.published = append(e.published, ev)
		return nil
	}).Maybe()
	e.OnWorkflow(FollowPayment, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in FollowOrder) (activities.FollowResult, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.followed = append(e.followed, workflow.GetInfo(ctx).WorkflowExecution.ID)
			if in.IntentID != "pi_1" || in.Order.WorkflowID != testWorkflowID || in.Order.Amount != 1299 {
				e.t.Errorf("follow %+v", in)
			}
			return activities.FollowResult{Status: order.StatusPartiallyRefunded, Changed: true}, nil
		}).Maybe()
	e.ExecuteWorkflow(Refund, RefundInput{Refund: r})
	if !e.IsWorkflowCompleted() {
		e.t.Fatal("workflow did not complete")
	}
	if err := e.GetWorkflowError(); err != nil {
		e.t.Fatalf("workflow error: %v", err)
	}
	var res RefundResult
	if err := e.GetWorkflowResult(&res); err != nil {
		e.t.Fatal(err)
	}
	return res
}

func succeededWith(id string, amount int64) activities.Reservation {
	return activities.Reservation{Status: refund.StatusSucceeded, Amount: amount, ProviderRefundID: id}
}

// onlyEvent checks that the run published one event, of typ.
func (e *refundEnv) onlyEvent(typ string) activities.Event {
	e.t.Helper()
	if len(e.published) != 1 || e.published[0].Type != typ {
		e.t.Fatalf("published %+v, want one %s", e.published, typ)
	}
	ev := e.published[0]
	if ev.RefundID != refund.IDFor(testRefundWorkflowID) || ev.WorkflowID != testRefundWorkflowID || ev.OrderID != order.IDFor(testWorkflowID) ||
		ev.Tenant != "acme" || ev.Amount != 1299 || ev.Currency != "USD" || ev.Status != "" {
		e.t.Fatalf("event %+v", ev)
	}
	return ev
}

func TestRefundSucceeds(t *testing.T) {
	e := newRefundEnv(t)
	res := e.run(testRefund(100), reserved(refund.StatusPending, 100, ""), func(int, int) (activities.Reservation, error) {
		return succeededWith("re_1", 100), nil
	})
	if res.Status != refund.StatusSucceeded || res.Amount != 100 || res.ProviderRefundID != "re_1" || res.Failure != "" {
		t.Fatalf("result %+v", res)
	}
	if e.recorded != 1 || !slices.Equal(e.gens, []int{0}) {
		t.Fatalf("recorded %d times, sent generations %v", e.recorded, e.gens)
	}
	want := FollowWorkflowID(testWorkflowID, "refund "+refund.IDFor(testRefundWorkflowID))
	if !slices.Equal(e.followed, []string{want}) {
		t.Fatalf("followed %v, want %s", e.followed, want)
	}
	if ev := e.onlyEvent(activities.EventRefundSucceeded); ev.RefundAmount != 100 || ev.PaymentRef != "pi_1" || ev.Reason != "" {
		t.Fatalf("event %+v", ev)
	}
}

// Over what is left: FAILED at the reservation; nothing is sent, the order does
// not move.
func TestRefundOverBudgetFails(t *testing.T) {
	e := newRefundEnv(t)
	const why = activities.FailureExceeds + ": 99 left"
	res := e.run(testRefund(100), reserved(refund.StatusFailed, 0, why), func(int, int) (activities.Reservation, error) {
		t.Error("a refund over budget was sent")
		return activities.Reservation{}, nil
	})
	if res.Status != refund.StatusFailed || res.Failure != why || res.Amount != 0 {
		t.Fatalf("result %+v", res)
	}
	if len(e.gens) != 0 || len(e.followed) != 0 {
		t.Fatalf("sent %v, followed %v", e.gens, e.followed)
	}
	if ev := e.onlyEvent(activities.EventRefundFailed); ev.Reason != why || ev.RefundAmount != 100 {
		t.Fatalf("event %+v", ev)
	}
}

// The provider refuses: FAILED with its code, never sent again.
func TestRefundRefusedByTheProviderFails(t *testing.T) {
	e := newRefundEnv(t)
	const why = "charge_disputed: Charge ch_1 has been disputed; it cannot be refunded."
	res := e.run(testRefund(0), reserved(refund.StatusPending, 1299, ""), func(int, int) (activities.Reservation, error) {
		return activities.Reservation{Status: refund.StatusFailed, Amount: 1299, Failure: why}, nil
	})
	if res.Status != refund.StatusFailed || res.Failure != why {
		t.Fatalf("result %+v", res)
	}
	if !slices.Equal(e.gens, []int{0}) || len(e.followed) != 0 {
		t.Fatalf("sent %v, followed %v", e.gens, e.followed)
	}
	if ev := e.onlyEvent(activities.EventRefundFailed); ev.Reason != why || ev.RefundAmount != 0 {
		t.Fatalf("event %+v", ev)
	}
}

// A lost answer (a timeout, a fresh 5xx) that the intent's refunds do not settle
// yet is sent again with the same key, which the activity then finds made.
func TestRefundLostAnswerSentAgainWithTheSameKey(t *testing.T) {
	e := newRefundEnv(t)
	res := e.run(testRefund(100), reserved(refund.StatusPending, 100, ""), func(_, attempt int) (activities.Reservation, error) {
		if attempt == 1 {
			return activities.Reservation{}, errors.New("refund ofpay_x: context deadline exceeded")
		}
		return succeededWith("re_1", 100), nil
	})
	if res.Status != refund.StatusSucceeded || !slices.Equal(e.gens, []int{0, 0}) {
		t.Fatalf("result %+v, generations %v", res, e.gens)
	}
}

// A saved 500 that made nothing (the activity read the intent's refunds): the
// next generation's key, after a pause.
func TestRefundSaved500SendsTheNextGeneration(t *testing.T) {
	e := newRefundEnv(t)
	res := e.run(testRefund(100), reserved(refund.StatusPending, 100, ""), func(gen, _ int) (activities.Reservation, error) {
		if gen < 2 {
			return activities.Reservation{}, temporal.NewNonRetryableApplicationError("payment provider: 500", activities.ErrPaymentUnknown, nil)
		}
		return succeededWith("re_3", 100), nil
	})
	if res.Status != refund.StatusSucceeded || res.ProviderRefundID != "re_3" || !slices.Equal(e.gens, []int{0, 1, 2}) {
		t.Fatalf("result %+v, generations %v", res, e.gens)
	}
	e.onlyEvent(activities.EventRefundSucceeded)
}

// A reset (or a run whose refund ended before) finds the refund SUCCEEDED and
// sends nothing; the order's follow and the event go again, under the same IDs.
func TestRefundEndedBeforeSendsNothing(t *testing.T) {
	e := newRefundEnv(t)
	done := reserved(refund.StatusSucceeded, 100, "")
	done.ProviderRefundID = "re_1"
	res := e.run(testRefund(100), done, func(int, int) (activities.Reservation, error) {
		t.Error("a refund that succeeded was sent again")
		return activities.Reservation{}, nil
	})
	if res.Status != refund.StatusSucceeded || res.ProviderRefundID != "re_1" || len(e.gens) != 0 || len(e.followed) != 1 {
		t.Fatalf("result %+v, sent %v, followed %v", res, e.gens, e.followed)
	}
}

// A refund of an order that does not exist ends FAILED and publishes nothing:
// there is no order to key its event by.
func TestRefundOfNoOrderPublishesNothing(t *testing.T) {
	e := newRefundEnv(t)
	wf := refund.WorkflowID("acme", identity.FromHTTP, "r-1")
	if wf != testRefundWorkflowID {
		t.Fatalf("workflow ID %s, want %s", wf, testRefundWorkflowID)
	}
	res := e.run(testRefund(100), activities.Reservation{Status: refund.StatusFailed, Failure: activities.FailureNotRefundable + ": no such order"},
		func(int, int) (activities.Reservation, error) { return activities.Reservation{}, nil })
	if res.Status != refund.StatusFailed || len(e.published) != 0 || len(e.gens) != 0 {
		t.Fatalf("result %+v, published %v, sent %v", res, e.published, e.gens)
	}
}

// Keys lost one after another: past maxTurns the run continues as new with the
// next generation, so its history stays bounded however long the outage lasts.
func TestRefundContinuesAsNewWithTheNextGeneration(t *testing.T) {
	e := newRefundEnv(t)
	e.OnActivity(e.payments.RecordRefund, mock.Anything, mock.Anything).Return(nil)
	e.OnActivity(e.payments.ReserveRefund, mock.Anything, mock.Anything).Return(reserved(refund.StatusPending, 100, ""), nil)
	var sent int
	e.OnActivity(e.payments.SendRefund, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SendInput) (activities.Reservation, error) {
			if in.Gen != 3+sent {
				t.Errorf("sent generation %d, want %d", in.Gen, 3+sent)
			}
			sent++
			return activities.Reservation{}, temporal.NewNonRetryableApplicationError("500", activities.ErrPaymentUnknown, nil)
		})
	e.ExecuteWorkflow(Refund, RefundInput{Refund: testRefund(100), Gen: 3})
	var next *workflow.ContinueAsNewError
	if err := e.GetWorkflowError(); !errors.As(err, &next) || sent != maxTurns {
		t.Fatalf("error %v after %d sends, want a continued run after %d", err, sent, maxTurns)
	}
	var in RefundInput
	if err := converter.GetDefaultDataConverter().FromPayloads(next.Input, &in); err != nil || in.Gen != 3+maxTurns || in.Refund.ID != testRefund(0).ID {
		t.Fatalf("continued with %+v, %v", in, err)
	}
}
