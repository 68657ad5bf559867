package workflows

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
)

const testWorkflowID = "order:acme:key-1"

// fakes records what the workflow asked of its activities.
type fakes struct {
	mu          sync.Mutex
	transitions []activities.Transition
	published   []activities.Event
	status      order.Status          // the read model's, as the store would keep it
	paidAt      *time.Time            // when the store first recorded PAID
	onMove      func(to order.Status) // called on each applied transition (nil: nothing)
}

func (f *fakes) eventTypes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.published {
		out = append(out, e.Type)
	}
	return out
}

type env struct {
	*testsuite.TestWorkflowEnvironment
	f        *fakes
	orders   *activities.Orders
	payments *activities.Payments
	events   *activities.Events
	// The fakes of the intent's creation and confirm, which PayIntent composes as
	// the activity does; the first one set is used.
	create  func(context.Context, activities.IntentInput) (activities.IntentResult, error)
	confirm func(context.Context, activities.ConfirmInput) (activities.IntentState, error)
}

// onCreate and onConfirm fake the intent's creation and confirm, which PayIntent
// composes (a confirm sent again is ConfirmIntent); a fake set before takes
// precedence.
func (e *env) onCreate(fn func(context.Context, activities.IntentInput) (activities.IntentResult, error)) {
	if e.create == nil {
		e.create = fn
		e.OnActivity(e.payments.PayIntent, mock.Anything, mock.Anything).Return(
			func(ctx context.Context, in activities.PayInput) (activities.PayResult, error) {
				return activities.Pay(ctx, in, e.create, e.confirm)
			}).Maybe()
	}
}

func (e *env) onConfirm(fn func(context.Context, activities.ConfirmInput) (activities.IntentState, error)) {
	if e.confirm == nil {
		e.confirm = fn
		e.OnActivity(e.payments.ConfirmIntent, mock.Anything, mock.Anything).Return(fn).Maybe()
	}
}

// deadlockAfter is how long a workflow task may run before the test environment
// calls it a deadlock: its default of 1 s is reached under -race on a busy machine.
const deadlockAfter = 10 * time.Second

func newEnv(t *testing.T) *env {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	e := &env{
		TestWorkflowEnvironment: s.NewTestWorkflowEnvironment(),
		f:                       &fakes{status: order.StatusPending},
		orders:                  activities.NewOrders(nil),
		payments:                activities.NewPayments(nil, nil, activities.PaymentMetrics{}),
		events:                  activities.NewEvents(nil, nil),
	}
	e.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testWorkflowID})
	e.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: deadlockAfter})
	e.RegisterWorkflow(Order)
	e.RegisterActivity(e.orders)
	e.RegisterActivity(e.payments)
	e.RegisterActivity(e.events)
	return e
}

// execute runs the workflow. The recording fakes are registered last, so a test's
// own expectations (registered before) take precedence.
func (e *env) execute(in PlaceOrder) {
	f := e.f
	e.OnActivity(e.orders.RecordOrder, mock.Anything, mock.Anything).Return(nil).Maybe()
	move := func(_ context.Context, tr activities.Transition) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		// As the order store does: the domain's state machine decides.
		if tr.To != f.status && !order.CanMove(f.status, tr.To) {
			return temporal.NewNonRetryableApplicationError("cannot go from "+string(f.status)+" to "+string(tr.To),
				activities.ErrInvalidTransition, nil)
		}
		if tr.To == order.StatusPaid && f.paidAt == nil {
			now := e.Now()
			f.paidAt = &now
		}
		f.status = tr.To
		f.transitions = append(f.transitions, tr)
		if f.onMove != nil {
			f.onMove(tr.To)
		}
		return nil
	}
	e.OnActivity(e.orders.Transition, mock.Anything, mock.Anything).Return(move).Maybe()
	e.OnActivity(e.orders.MarkPaid, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, tr activities.Transition) (time.Time, error) {
			if err := move(ctx, tr); err != nil {
				return time.Time{}, err
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			return *f.paidAt, nil
		}).Maybe()
	e.OnActivity(e.orders.PaidAt, mock.Anything, mock.Anything).Return(
		func(context.Context, string) (*time.Time, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.paidAt, nil
		}).Maybe()
	e.OnActivity(e.events.Publish, mock.Anything, mock.Anything).Return(
		func(_ context.Context, ev activities.Event) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.published = append(f.published, ev)
			return nil
		}).Maybe()
	e.ExecuteWorkflow(Order, in)
}

func placeOrder() PlaceOrder {
	return PlaceOrder{Order: order.Order{
		ID: order.IDFor(testWorkflowID), Tenant: "acme", CustomerID: "c1", Currency: "USD",
		Items: []order.Item{{SKU: "sku", Quantity: 2, UnitAmount: 1299}}, Amount: 2598, PaymentMethod: "pm_card_visa",
	}}
}

func (e *env) result(t *testing.T) OrderResult {
	t.Helper()
	if !e.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := e.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var res OrderResult
	if err := e.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// paid answers the order's intent with success at once.
func (e *env) paid() *intents { return e.onIntents(nil, []answer{succeeded()}, nil) }

func TestHappyPath(t *testing.T) {
	e := newEnv(t)
	e.paid()
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaid || !res.Fulfilled || res.ChargeID != "ch_1" {
		t.Fatalf("result = %+v, want PAID, fulfilled, ch_1", res)
	}
	if got := e.f.eventTypes(); !equal(got, []string{activities.EventOrderPaid}) {
		t.Fatalf("events = %v", got)
	}
	if e.f.published[0].WorkflowID != testWorkflowID || e.f.published[0].PaymentRef != "pi_1" {
		t.Fatalf("event = %+v", e.f.published[0])
	}
}

func TestDeclineIsAnOutcomeNotARetryLoop(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{{err: typed(activities.ErrCardDeclined)}}, nil)
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaymentDeclined {
		t.Fatalf("status = %s", res.Status)
	}
	if n := len(rec.confirms); n != 1 {
		t.Fatalf("confirms = %d, want 1", n)
	}
	if got := e.f.eventTypes(); !equal(got, []string{activities.EventOrderPaymentDeclined}) {
		t.Fatalf("events = %v", got)
	}
	if len(rec.refunds) != 0 {
		t.Fatal("refunded a declined payment")
	}
}

// A fresh 5xx (or a timeout) is retried by the activity's policy, with the same
// keys on every attempt: the creation is answered by its replay, the confirm by its.
func TestProvider5xxRetriedWithTheSameKey(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{{err: errors.New("payment provider: 500")}, {err: errors.New("payment provider: 503")}, succeeded()}, nil)
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaid {
		t.Fatalf("status = %s", res.Status)
	}
	if !equal(rec.creates, keys("intent", 0, 0, 0)) || !equal(rec.confirms, keys("confirm", 0, 0, 0)) {
		t.Fatalf("creates %v, confirms %v: want three attempts with the keys of generation 0", rec.creates, rec.confirms)
	}
}

// Marking the order PAID is refused (its state forbids it) after money moved: the
// payment is refunded and the order ends FAILED.
func TestFailureAfterChargeRefunds(t *testing.T) {
	e := newEnv(t)
	rec := e.paid()
	e.OnActivity(e.orders.MarkPaid, mock.Anything, mock.Anything).Return(
		time.Time{}, temporal.NewNonRetryableApplicationError("cannot go to PAID", activities.ErrInvalidTransition, nil))
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusFailed || res.RefundID != "re_1" {
		t.Fatalf("result = %+v, want FAILED with refund re_1", res)
	}
	if len(rec.refunds) != 1 || rec.refunds[0].IntentID != "pi_1" || rec.refunds[0].Amount != 2598 ||
		rec.refunds[0].Key != order.PaymentKey(testWorkflowID, "refund", 0) {
		t.Fatalf("refunds = %+v", rec.refunds)
	}
	last := e.f.transitions[len(e.f.transitions)-1]
	if last.To != order.StatusFailed || last.Failure == "" {
		t.Fatalf("last transition = %+v", last)
	}
}

// Postgres down for 45 seconds while the order is marked paid: the store step (a
// local activity) is retried until it answers; the order ends PAID, never FAILED
// and refunded. (Longer outages move to the regular activity:
// TestPostgresDownForAWeekKeepsTheHistoryBounded.)
func TestPostgresOutageIsAWait(t *testing.T) {
	e := newEnv(t)
	rec := e.paid()
	var down time.Time
	e.OnActivity(e.orders.Transition, mock.Anything, mock.MatchedBy(func(tr activities.Transition) bool {
		return tr.To == order.StatusPaid
	})).Return(func(context.Context, activities.Transition) error {
		if down.IsZero() {
			down = e.Now()
		}
		if e.Now().Sub(down) < 45*time.Second {
			return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
		}
		return nil
	})
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaid || len(rec.refunds) != 0 {
		t.Fatalf("result = %+v, refunds %d: want PAID, none", res, len(rec.refunds))
	}
}

// Kafka down: the publish of OrderPaid is retried, the order stays PAID and is never
// refunded. (The test environment gives up after 10 attempts; the chaos suite keeps
// Kafka down for longer than the old publish budget.)
func TestPublishFailuresAreRetriedNeverRefunded(t *testing.T) {
	e := newEnv(t)
	rec := e.paid()
	failures := 0
	e.OnActivity(e.events.Publish, mock.Anything, mock.Anything).Return(func(ctx context.Context, ev activities.Event) error {
		e.f.mu.Lock()
		defer e.f.mu.Unlock()
		if failures < 9 {
			failures++
			return errors.New("kafka: leader not available")
		}
		e.f.published = append(e.f.published, ev)
		return nil
	})
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaid || len(rec.refunds) != 0 || !equal(e.f.eventTypes(), []string{activities.EventOrderPaid}) {
		t.Fatalf("result %+v, refunds %d, events %v after %d failures: want PAID, none, OrderPaid", res, len(rec.refunds), e.f.eventTypes(), failures)
	}
}

// Kafka down when OrderPaid is published: one local attempt, then the regular
// activity, retried until Kafka is back (here: it fails the local attempt and two
// regular ones). Local attempts hold a workflow task slot of the worker; retried
// through a whole outage, they would take every slot and stop other orders'
// charges.
func TestPublishOutageMovesToARegularActivity(t *testing.T) {
	e := newEnv(t)
	rec := e.paid()
	var down, lastLocal time.Time
	local, regular := 0, 0
	e.OnActivity(e.events.Publish, mock.Anything, mock.Anything).Return(func(ctx context.Context, ev activities.Event) error {
		e.f.mu.Lock()
		defer e.f.mu.Unlock()
		if down.IsZero() {
			down = e.Now()
		}
		if activity.GetInfo(ctx).IsLocalActivity {
			local++
			lastLocal = e.Now()
		} else {
			regular++
		}
		if regular < 3 && local < 30 { // (a bound, so a publish that never leaves its local attempts fails here rather than hangs)
			return errors.New("kafka: leader not available")
		}
		e.f.published = append(e.f.published, ev)
		return nil
	})
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaid || len(rec.refunds) != 0 || !equal(e.f.eventTypes(), []string{activities.EventOrderPaid}) {
		t.Fatalf("result %+v, refunds %d, events %v: want PAID, none, OrderPaid", res, len(rec.refunds), e.f.eventTypes())
	}
	t.Logf("%d local attempts over %s, then %d regular ones", local, lastLocal.Sub(down), regular)
	if local != 1 || regular != 3 || lastLocal.Sub(down) > 10*time.Second {
		t.Fatalf("%d local attempts (the last %s into the outage), %d regular: want one local, then regular ones",
			local, lastLocal.Sub(down), regular)
	}
}

func (e *env) statuses() []order.Status {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	var out []order.Status
	for _, tr := range e.f.transitions {
		out = append(out, tr.To)
	}
	return out
}

// Refused credentials: nothing ran at the provider, so the same key is sent again
// after a pause, and nothing is read back; a definite refusal fails the order at
// once.
func TestCredentialsAreRetriedAndRefusalsAreFinal(t *testing.T) {
	e := newEnv(t)
	rec := e.onIntents(nil, []answer{{err: temporal.NewApplicationError("401", activities.ErrProviderUnauthorized)}, succeeded()}, nil)
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaid || len(rec.retrieves) != 0 || !equal(rec.confirms, keys("confirm", 0, 0)) {
		t.Fatalf("after a 401: %+v, confirms %v, %d reads", res, rec.confirms, len(rec.retrieves))
	}

	e = newEnv(t)
	rec = e.onIntents(nil, []answer{{err: typed(activities.ErrPaymentRejected)}}, nil)
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusFailed || len(rec.retrieves) != 0 || len(rec.refunds) != 0 {
		t.Fatalf("after a refusal: %+v, %d reads, %d refunds", res, len(rec.retrieves), len(rec.refunds))
	}
}

func (e *env) cancelAt(t *testing.T, after time.Duration, done func(OrderResult, error)) {
	e.cancelAs("cancel-1", after, done)
}

// cancelAs sends the cancel update with its own update ID, as a retried request does.
func (e *env) cancelAs(id string, after time.Duration, done func(OrderResult, error)) {
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(UpdateCancel, id, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { done(OrderResult{}, err) },
			OnComplete: func(v any, err error) {
				res, _ := v.(OrderResult)
				done(res, err)
			},
		})
	}, after)
}

func TestCancelBeforePayment(t *testing.T) {
	e := newEnv(t)
	rec := e.paid()
	e.OnActivity(e.orders.RecordOrder, mock.Anything, mock.Anything).After(time.Minute).Return(nil)
	var upd OrderResult
	var updErr error
	e.cancelAt(t, time.Second, func(r OrderResult, err error) { upd, updErr = r, err })
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusCancelled {
		t.Fatalf("status = %s", res.Status)
	}
	if updErr != nil || upd.Status != order.StatusCancelled {
		t.Fatalf("update answered %+v, %v", upd, updErr)
	}
	if len(rec.creates) != 0 || len(rec.refunds) != 0 {
		t.Fatalf("paid %d, refunded %d: want neither", len(rec.creates), len(rec.refunds))
	}
	if got := e.f.eventTypes(); !equal(got, []string{activities.EventOrderCancelled}) {
		t.Fatalf("events = %v", got)
	}
}

// A cancel whose answer is slow (the API gave up waiting) is retried: the retry
// joins the cancel going through and answers CANCELLED with it, never
// NotCancellable for an order that then ends CANCELLED.
func TestARetriedCancelJoinsTheFirst(t *testing.T) {
	e := newEnv(t)
	rec := e.paid()
	e.OnActivity(e.orders.RecordOrder, mock.Anything, mock.Anything).After(time.Minute).Return(nil)
	answers := map[string]error{}
	var statuses []string
	for i, id := range []string{"cancel-1", "cancel-2"} {
		e.cancelAs(id, time.Duration(i+1)*time.Second, func(r OrderResult, err error) {
			answers[id] = err
			statuses = append(statuses, string(r.Status))
		})
	}
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusCancelled {
		t.Fatalf("status = %s", res.Status)
	}
	if answers["cancel-1"] != nil || answers["cancel-2"] != nil || !equal(statuses, []string{"CANCELLED", "CANCELLED"}) {
		t.Fatalf("cancel answers %v, statuses %v: want both CANCELLED", answers, statuses)
	}
	if len(rec.creates) != 0 || len(rec.refunds) != 0 || !equal(e.f.eventTypes(), []string{activities.EventOrderCancelled}) {
		t.Fatalf("paid %d, refunded %d, events %v: want one cancel", len(rec.creates), len(rec.refunds), e.f.eventTypes())
	}
}

func TestCancelAfterPaymentRefunds(t *testing.T) {
	e := newEnv(t)
	e.paid()
	in := placeOrder()
	in.CancelWindow = time.Hour
	var upd OrderResult
	var updErr error
	e.cancelAt(t, 10*time.Minute, func(r OrderResult, err error) { upd, updErr = r, err })
	e.execute(in)
	res := e.result(t)
	if res.Status != order.StatusCancelled || res.RefundID != "re_1" || res.Fulfilled {
		t.Fatalf("result = %+v, want CANCELLED with refund, not fulfilled", res)
	}
	if updErr != nil || upd.Status != order.StatusCancelled {
		t.Fatalf("update answered %+v, %v", upd, updErr)
	}
	if got := e.f.eventTypes(); !equal(got, []string{activities.EventOrderPaid, activities.EventOrderCancelled}) {
		t.Fatalf("events = %v", got)
	}
}

func TestCancelRejectedOnceSettled(t *testing.T) {
	e := newEnv(t)
	e.onIntents(nil, []answer{{err: typed(activities.ErrCardDeclined)}}, nil)
	in := placeOrder()
	var updErr error
	// The decline settles the order at once; hold the workflow open with a slow
	// event publish so the update arrives while it still runs.
	e.OnActivity(e.events.Publish, mock.Anything, mock.Anything).After(time.Hour).Return(nil)
	e.cancelAt(t, 30*time.Minute, func(_ OrderResult, err error) { updErr = err })
	e.execute(in)
	if res := e.result(t); res.Status != order.StatusPaymentDeclined {
		t.Fatalf("status = %s", res.Status)
	}
	var appErr *temporal.ApplicationError
	if !errors.As(updErr, &appErr) || appErr.Type() != ErrNotCancellable {
		t.Fatalf("update error = %v, want %s", updErr, ErrNotCancellable)
	}
}
