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
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/internal/order"
)

const testWorkflowID = "order:acme:key-1"

// fakes records what the workflow asked of its activities.
type fakes struct {
	mu          sync.Mutex
	transitions []activities.Transition
	published   []activities.Event
	chargeKeys  []string
	attempts    []int32
	refunds     []activities.RefundInput
	status      order.Status          // the read model's, as the store would keep it
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

// onCreate and onConfirm fake the intent's creation and confirm, in one activity
// (PayIntent) or two; a fake set before takes precedence.
func (e *env) onCreate(fn func(context.Context, activities.IntentInput) (activities.IntentResult, error)) {
	if e.create == nil {
		e.create = fn
		e.OnActivity(e.payments.CreateIntent, mock.Anything, mock.Anything).Return(fn).Maybe()
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
	e.RegisterWorkflow(OrderWorkflow)
	e.RegisterActivity(e.orders)
	e.RegisterActivity(e.payments)
	e.RegisterActivity(e.events)
	return e
}

// newChargesEnv is an environment whose run takes the path of runs started before
// changeIntents: the Charges API, reconciled by search.
func newChargesEnv(t *testing.T) *env {
	e := newEnv(t)
	e.OnGetVersion(changePayInOneCall, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	e.OnGetVersion(changeIntents, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	return e
}

// execute runs the workflow. The recording fakes are registered last, so a test's
// own expectations (registered before) take precedence.
func (e *env) execute(in PlaceOrder) {
	f := e.f
	e.OnActivity(e.orders.RecordOrder, mock.Anything, mock.Anything).Return(nil).Maybe()
	e.OnActivity(e.orders.Transition, mock.Anything, mock.Anything).Return(
		func(_ context.Context, tr activities.Transition) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			// As the order store does: the domain's state machine decides.
			if tr.To != f.status && !order.CanMove(f.status, tr.To) {
				return temporal.NewNonRetryableApplicationError("cannot go from "+string(f.status)+" to "+string(tr.To),
					activities.ErrInvalidTransition, nil)
			}
			f.status = tr.To
			f.transitions = append(f.transitions, tr)
			if f.onMove != nil {
				f.onMove(tr.To)
			}
			return nil
		}).Maybe()
	e.OnActivity(e.events.Publish, mock.Anything, mock.Anything).Return(
		func(_ context.Context, ev activities.Event) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.published = append(f.published, ev)
			return nil
		}).Maybe()
	e.OnActivity(e.payments.Refund, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RefundInput) (activities.RefundResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.refunds = append(f.refunds, in)
			return activities.RefundResult{Key: in.Key, RefundID: "re_1"}, nil
		}).Maybe()
	e.ExecuteWorkflow(OrderWorkflow, in)
}

// onCharge answers the n-th charge call, over attempts and generations, with
// results[n-1] (the last one repeats).
func (e *env) onCharge(results ...error) {
	f := e.f
	e.OnActivity(e.payments.Charge, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ChargeInput) (activities.ChargeResult, error) {
			attempt := activity.GetInfo(ctx).Attempt
			f.mu.Lock()
			f.chargeKeys = append(f.chargeKeys, in.Key)
			f.attempts = append(f.attempts, attempt)
			n := len(f.chargeKeys)
			err := results[min(n, len(results))-1]
			var appErr *temporal.ApplicationError
			if err == nil || errors.As(err, &appErr) {
				// The attempt got as far as the provider, so the real activity had
				// recorded PAYMENT_PENDING; a plain error stands for one that failed
				// before (Postgres down).
				if order.CanMove(f.status, order.StatusPaymentPending) {
					f.status = order.StatusPaymentPending
				}
			}
			f.mu.Unlock()
			if err != nil {
				return activities.ChargeResult{}, err
			}
			return activities.ChargeResult{Key: in.Key, ChargeID: "ch_1"}, nil
		})
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

func TestHappyPath(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(nil)
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaid || !res.Fulfilled || res.ChargeID != "ch_1" {
		t.Fatalf("result = %+v, want PAID, fulfilled, ch_1", res)
	}
	if got := e.f.eventTypes(); !equal(got, []string{activities.EventOrderPaid}) {
		t.Fatalf("events = %v", got)
	}
	last := e.f.transitions[len(e.f.transitions)-1]
	if last.To != order.StatusPaid || last.PaymentRef != "ch_1" {
		t.Fatalf("last transition = %+v", last)
	}
	if e.f.published[0].WorkflowID != testWorkflowID {
		t.Fatalf("event workflow ID = %q", e.f.published[0].WorkflowID)
	}
}

func TestDeclineIsAnOutcomeNotARetryLoop(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(temporal.NewNonRetryableApplicationError("declined", activities.ErrCardDeclined, nil))
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaymentDeclined {
		t.Fatalf("status = %s", res.Status)
	}
	if n := len(e.f.chargeKeys); n != 1 {
		t.Fatalf("charge attempts = %d, want 1", n)
	}
	if got := e.f.eventTypes(); !equal(got, []string{activities.EventOrderPaymentDeclined}) {
		t.Fatalf("events = %v", got)
	}
	if len(e.f.refunds) != 0 {
		t.Fatal("refunded a declined charge")
	}
}

func TestProvider5xxRetriedWithTheSameKey(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(errors.New("payment provider: 500"), errors.New("payment provider: 503"), nil)
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaid {
		t.Fatalf("status = %s", res.Status)
	}
	if len(e.f.chargeKeys) != 3 {
		t.Fatalf("charge attempts = %d, want 3", len(e.f.chargeKeys))
	}
	want := order.PaymentKey(testWorkflowID, "charge", 0)
	for i, k := range e.f.chargeKeys {
		if k != want {
			t.Fatalf("attempt %d (#%d) used key %q, want %q", i+1, e.f.attempts[i], k, want)
		}
	}
	if e.f.attempts[2] != 3 {
		t.Fatalf("attempt numbers = %v", e.f.attempts)
	}
}

// Marking the order PAID is refused (its state forbids it) after money moved: the
// charge is refunded and the order ends FAILED.
func TestFailureAfterChargeRefunds(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(nil)
	e.OnActivity(e.orders.Transition, mock.Anything, mock.MatchedBy(func(tr activities.Transition) bool {
		return tr.To == order.StatusPaid
	})).Return(temporal.NewNonRetryableApplicationError("cannot go to PAID", activities.ErrInvalidTransition, nil))
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusFailed || res.RefundID != "re_1" {
		t.Fatalf("result = %+v, want FAILED with refund re_1", res)
	}
	if len(e.f.refunds) != 1 || e.f.refunds[0].ChargeID != "ch_1" || e.f.refunds[0].Amount != 2598 ||
		e.f.refunds[0].Key != order.PaymentKey(testWorkflowID, "refund", 0) {
		t.Fatalf("refunds = %+v", e.f.refunds)
	}
	last := e.f.transitions[len(e.f.transitions)-1]
	if last.To != order.StatusFailed || last.Failure == "" {
		t.Fatalf("last transition = %+v", last)
	}
}

// Postgres down for five minutes while the order is marked paid: the store step (a
// local activity) is retried until it answers; the order ends PAID, never FAILED
// and refunded.
func TestPostgresOutageIsAWait(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(nil)
	var down time.Time
	e.OnActivity(e.orders.Transition, mock.Anything, mock.MatchedBy(func(tr activities.Transition) bool {
		return tr.To == order.StatusPaid
	})).Return(func(context.Context, activities.Transition) error {
		if down.IsZero() {
			down = e.Now()
		}
		if e.Now().Sub(down) < 5*time.Minute {
			return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
		}
		return nil
	})
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaid || len(e.f.refunds) != 0 {
		t.Fatalf("result = %+v, refunds %d: want PAID, none", res, len(e.f.refunds))
	}
}

// Kafka down: the publish of OrderPaid is retried, the order stays PAID and is never
// refunded. (The test environment gives up after 10 attempts; the chaos suite keeps
// Kafka down for longer than the old publish budget.)
func TestPublishFailuresAreRetriedNeverRefunded(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(nil)
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
	if res.Status != order.StatusPaid || len(e.f.refunds) != 0 || !equal(e.f.eventTypes(), []string{activities.EventOrderPaid}) {
		t.Fatalf("result %+v, refunds %d, events %v after %d failures: want PAID, none, OrderPaid", res, len(e.f.refunds), e.f.eventTypes(), failures)
	}
}

// Kafka down when OrderPaid is published: one local attempt, then the regular
// activity, retried until Kafka is back (here: it fails the local attempt and two
// regular ones). Local attempts hold a workflow task slot of the worker; retried
// through a whole outage, they would take every slot and stop other orders'
// charges.
func TestPublishOutageMovesToARegularActivity(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(nil)
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
	if res.Status != order.StatusPaid || len(e.f.refunds) != 0 || !equal(e.f.eventTypes(), []string{activities.EventOrderPaid}) {
		t.Fatalf("result %+v, refunds %d, events %v: want PAID, none, OrderPaid", res, len(e.f.refunds), e.f.eventTypes())
	}
	t.Logf("%d local attempts over %s, then %d regular ones", local, lastLocal.Sub(down), regular)
	if local != 1 || regular != 3 || lastLocal.Sub(down) > 10*time.Second {
		t.Fatalf("%d local attempts (the last %s into the outage), %d regular: want one local, then regular ones",
			local, lastLocal.Sub(down), regular)
	}
}

// onLookup answers lookups with found (or not), recording them.
func (e *env) onLookup(found ...bool) *[]activities.LookupInput {
	var asked []activities.LookupInput
	e.OnActivity(e.payments.Lookup, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.LookupInput) (activities.LookupResult, error) {
			e.f.mu.Lock()
			defer e.f.mu.Unlock()
			asked = append(asked, in)
			if found[min(len(asked), len(found))-1] {
				return activities.LookupResult{Found: true, ID: "ch_found"}, nil
			}
			return activities.LookupResult{}, nil
		})
	return &asked
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

// A saved 5xx: the same key can never tell, so the order goes PAYMENT_UNKNOWN, waits
// the lookup delay and looks the charge up. Found: PAID with that charge, no second
// charge.
func TestUnknownOutcomeFoundByLookup(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(temporal.NewNonRetryableApplicationError("500 replayed", activities.ErrPaymentUnknown, nil))
	asked := e.onLookup(true)
	in := placeOrder()
	in.LookupDelay = 90 * time.Second
	e.execute(in)
	res := e.result(t)
	if res.Status != order.StatusPaid || res.ChargeID != "ch_found" || len(e.f.chargeKeys) != 1 || len(*asked) != 1 {
		t.Fatalf("result %+v after %d charges and %d lookups: want PAID with ch_found, 1 and 1", res, len(e.f.chargeKeys), len(*asked))
	}
	if got := e.statuses(); len(got) != 2 || got[0] != order.StatusPaymentUnknown || got[1] != order.StatusPaid {
		t.Fatalf("transitions = %v, want PAYMENT_UNKNOWN then PAID", got)
	}
	if (*asked)[0].Key != order.PaymentKey(testWorkflowID, "charge", 0) || (*asked)[0].ChargeID != "" {
		t.Fatalf("lookup = %+v", (*asked)[0])
	}
	if e.Now().Sub(time.Time{}) < 0 { // the environment's clock moved by the delay
		t.Fatal("unreachable")
	}
}

// Not found after the window: charged again with the next generation's key; every
// attempt used a fixed-length key, and attempts never count as generations.
func TestUnknownOutcomeNotFoundChargesWithTheNextKey(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(errors.New("timeout"), errors.New("timeout"), errors.New("timeout"), errors.New("timeout"), nil)
	e.onLookup(false)
	e.execute(placeOrder())
	res := e.result(t)
	if res.Status != order.StatusPaid || res.ChargeID != "ch_1" {
		t.Fatalf("result = %+v, keys %v, transitions %v", res, e.f.chargeKeys, e.statuses())
	}
	k0, k1 := order.PaymentKey(testWorkflowID, "charge", 0), order.PaymentKey(testWorkflowID, "charge", 1)
	want := []string{k0, k0, k0, k0, k1}
	if !equal(e.f.chargeKeys, want) {
		t.Fatalf("keys = %v, want 4 attempts of generation 0 then generation 1", e.f.chargeKeys)
	}
}

// A key still in use at the provider (409: the first request with it runs on, as a
// provider slower than the client's timeout does) is never an unknown outcome: the
// same key is sent again after a pause, until the first request's answer comes
// back, and no lookup or second generation can charge again.
func TestKeyInUseWaitsForTheFirstRequest(t *testing.T) {
	e := newChargesEnv(t)
	inUse := temporal.NewNonRetryableApplicationError("409 idempotency_key_in_use", activities.ErrPaymentInFlight, nil)
	e.onCharge(inUse, inUse, inUse, inUse, inUse, nil)
	asked := e.onLookup(false)
	e.execute(placeOrder())
	k0 := order.PaymentKey(testWorkflowID, "charge", 0)
	if res := e.result(t); res.Status != order.StatusPaid || len(*asked) != 0 || !equal(e.f.chargeKeys, []string{k0, k0, k0, k0, k0, k0}) {
		t.Fatalf("after 409s: %+v, keys %v, %d lookups; want PAID with the first key only, no lookup", res, e.f.chargeKeys, len(*asked))
	}
}

// Refused credentials: nothing ran at the provider, so the same key is sent again
// after a pause, without a lookup; a definite refusal fails the order at once.
func TestCredentialsAreRetriedAndRefusalsAreFinal(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(temporal.NewNonRetryableApplicationError("401", activities.ErrProviderUnauthorized, nil), nil)
	asked := e.onLookup(false)
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusPaid || len(*asked) != 0 ||
		!equal(e.f.chargeKeys, []string{order.PaymentKey(testWorkflowID, "charge", 0), order.PaymentKey(testWorkflowID, "charge", 0)}) {
		t.Fatalf("after a 401: %+v, keys %v, %d lookups", res, e.f.chargeKeys, len(*asked))
	}

	e = newChargesEnv(t)
	e.onCharge(temporal.NewNonRetryableApplicationError("400", activities.ErrPaymentRejected, nil))
	asked = e.onLookup(false)
	e.execute(placeOrder())
	if res := e.result(t); res.Status != order.StatusFailed || len(*asked) != 0 || len(e.f.refunds) != 0 {
		t.Fatalf("after a refusal: %+v, %d lookups, %d refunds", res, len(*asked), len(e.f.refunds))
	}
}

func (e *env) cancelAt(t *testing.T, after time.Duration, done func(OrderResult, error)) {
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(UpdateCancel, "cancel-1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { done(OrderResult{}, err) },
			OnComplete: func(v any, err error) {
				res, _ := v.(OrderResult)
				done(res, err)
			},
		})
	}, after)
}

func TestCancelBeforePayment(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(nil)
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
	if len(e.f.chargeKeys) != 0 || len(e.f.refunds) != 0 {
		t.Fatalf("charged %d, refunded %d: want neither", len(e.f.chargeKeys), len(e.f.refunds))
	}
	if got := e.f.eventTypes(); !equal(got, []string{activities.EventOrderCancelled}) {
		t.Fatalf("events = %v", got)
	}
}

func TestCancelAfterPaymentRefunds(t *testing.T) {
	e := newChargesEnv(t)
	e.onCharge(nil)
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
	e := newChargesEnv(t)
	e.onCharge(temporal.NewNonRetryableApplicationError("declined", activities.ErrCardDeclined, nil))
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
