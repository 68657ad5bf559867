package workflows

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
)

// week is how long the outages below last, on the test suite's clock.
const week = 7 * 24 * time.Hour

// maxRunEvents is the bound this package states for one run's history: far under
// Temporal's 51,200, whatever an outage's length.
const maxRunEvents = 1000

// historyCost estimates, from what a run does in the test suite, the events the
// server would record for it, from above: an activity's scheduled, started and
// closed events (its attempts add none); a timer's started and fired; a local
// activity's marker, plus a workflow task heartbeat (three events) for every 8 s
// its attempts span; a workflow task (three events) after each of those.
type historyCost struct {
	mu         sync.Mutex
	activities map[string]bool
	timers     int
	locals     map[string][2]time.Time // first start, last completion
	clock      func() time.Time
}

func watchHistory(e *env) *historyCost {
	h := &historyCost{activities: map[string]bool{}, locals: map[string][2]time.Time{}, clock: e.Now}
	e.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.activities[info.ActivityID] = true
	})
	e.SetOnTimerScheduledListener(func(string, time.Duration) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.timers++
	})
	e.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.locals[info.ActivityID]; !ok {
			h.locals[info.ActivityID] = [2]time.Time{h.clock(), h.clock()}
		}
	})
	e.SetOnLocalActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		span, ok := h.locals[info.ActivityID]
		if !ok { // the suite retries a local activity under a new ID, unannounced
			span[0] = h.clock()
		}
		span[1] = h.clock()
		h.locals[info.ActivityID] = span
	})
	return h
}

func (h *historyCost) events() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 3 // started, the first workflow task
	n += len(h.activities) * (3 + 3)
	n += h.timers * (2 + 3)
	for _, span := range h.locals {
		n += 1 + 3 + 3*int(span[1].Sub(span[0])/(8*time.Second))
	}
	return n + 1 // closed
}

// outage runs the order from in until it closes, following each continue-as-new
// on a fresh environment whose clock goes on where the last one stopped; setup
// mocks the activities of each run. It returns the last environment and each
// run's estimated history.
func outage(t *testing.T, start time.Time, in PlaceOrder, setup func(*env)) (*env, []int) {
	t.Helper()
	clock := start
	var runs []int
	for {
		e := newEnv(t)
		// A week of attempts takes a few seconds of real time, more under -race.
		e.SetTestTimeout(5 * time.Minute)
		e.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: deadlockAfter, Interceptors: []interceptor.WorkerInterceptor{&serverAttempts{}}})
		e.SetStartTime(clock)
		setup(e)
		h := watchHistory(e)
		e.execute(in)
		runs = append(runs, h.events())
		var can *workflow.ContinueAsNewError
		if !errors.As(e.GetWorkflowError(), &can) {
			return e, runs
		}
		if len(runs) > 1000 {
			t.Fatalf("%d runs and counting", len(runs))
		}
		in = PlaceOrder{}
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
			t.Fatal(err)
		}
		clock = e.Now()
	}
}

// serverAttempts gives the activities a retry policy without a maximum of attempts
// what the server gives them, unlimited: the test suite caps them at 10. It also
// widens each attempt's timeouts: the suite's clock can skip past them while a
// mocked attempt runs on a slow (race-instrumented) machine, which the server's
// clock never does.
type serverAttempts struct {
	interceptor.WorkerInterceptorBase
}

func (*serverAttempts) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &serverAttemptsInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type serverAttemptsInbound struct {
	interceptor.WorkflowInboundInterceptorBase
}

func (i *serverAttemptsInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&serverAttemptsOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}})
}

type serverAttemptsOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
}

func (o *serverAttemptsOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	opts := workflow.GetActivityOptions(ctx)
	if p := opts.RetryPolicy; p != nil && p.MaximumAttempts == 0 {
		unlimited := *p
		unlimited.MaximumAttempts = math.MaxInt32
		opts.RetryPolicy = &unlimited
	}
	opts.StartToCloseTimeout, opts.HeartbeatTimeout = time.Hour, 0
	return o.Next.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), activityType, args...)
}

func (o *serverAttemptsOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	opts := workflow.GetLocalActivityOptions(ctx)
	if p := opts.RetryPolicy; p != nil && p.MaximumAttempts == 0 {
		unlimited := *p
		unlimited.MaximumAttempts = math.MaxInt32
		opts.RetryPolicy = &unlimited
		ctx = workflow.WithLocalActivityOptions(ctx, opts)
	}
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func checkBounded(t *testing.T, runs []int) {
	t.Helper()
	for i, n := range runs {
		if n > maxRunEvents {
			t.Fatalf("run %d of %d: about %d history events, over the bound of %d", i+1, len(runs), n, maxRunEvents)
		}
	}
}

// Refused credentials for a week, then accepted: one intent, one confirm, PAID, and
// the wait added nothing to the history (the activity's attempts).
func TestCredentialsRefusedForAWeekKeepTheHistoryBounded(t *testing.T) {
	start := time.Now() // activities' deadlines are on the real clock: never start in the past
	var rec *intents
	e, runs := outage(t, start, placeOrder(), func(e *env) {
		e.onCreate(func(_ context.Context, in activities.IntentInput) (activities.IntentResult, error) {
			e.f.mu.Lock()
			defer e.f.mu.Unlock()
			rec.creates = append(rec.creates, in.Key)
			if e.Now().Sub(start) < week {
				return activities.IntentResult{}, temporal.NewApplicationError("invalid API key", activities.ErrProviderUnauthorized)
			}
			return activities.IntentResult{Key: in.Key, IntentID: "pi_1"}, nil
		})
		rec = e.onIntents(nil, []answer{succeeded()}, nil)
	})
	if res := e.result(t); res.Status != order.StatusPaid || !equal(rec.confirms, keys("confirm", 0)) {
		t.Fatalf("result %+v after confirms %v", res, rec.confirms)
	}
	if e.Now().Sub(start) < week || len(rec.creates) < 1000 {
		t.Fatalf("%d creation attempts over %v: the outage did not last", len(rec.creates), e.Now().Sub(start))
	}
	for _, k := range rec.creates {
		if k != keys("intent", 0)[0] {
			t.Fatalf("creation with key %s: refused credentials are retried with the same key", k)
		}
	}
	checkBounded(t, runs)
	t.Logf("%d creation attempts over a week; %d run(s), about %v history events", len(rec.creates), len(runs), runs)
}

// A saved 5xx on every creation for a week: a new key each turn, the run continued
// as new with its generations, so the keys never repeat and the last run confirms
// the intent that was created; the orphans are swept.
func TestSaved5xxForAWeekContinuesAsNew(t *testing.T) {
	start := time.Now() // activities' deadlines are on the real clock: never start in the past
	var creates []string
	var all []*intents
	e, runs := outage(t, start, placeOrder(), func(e *env) {
		e.onCreate(func(_ context.Context, in activities.IntentInput) (activities.IntentResult, error) {
			e.f.mu.Lock()
			defer e.f.mu.Unlock()
			creates = append(creates, in.Key)
			if e.Now().Sub(start) < week {
				return activities.IntentResult{}, typed(activities.ErrPaymentUnknown)
			}
			return activities.IntentResult{Key: in.Key, IntentID: "pi_1"}, nil
		})
		all = append(all, e.onIntents(nil, []answer{succeeded()}, nil))
	})
	if res := e.result(t); res.Status != order.StatusPaid {
		t.Fatalf("result %+v", res)
	}
	seen := map[string]bool{}
	for _, k := range creates {
		if seen[k] {
			t.Fatalf("key %s sent twice after a saved 5xx: its answer is saved", k)
		}
		seen[k] = true
	}
	last := all[len(all)-1]
	if len(runs) < 2 || len(last.confirms) != 1 || len(last.sweeps) != 1 {
		t.Fatalf("%d runs, last run confirms %v, sweeps %d", len(runs), last.confirms, len(last.sweeps))
	}
	checkBounded(t, runs)
	t.Logf("%d keys over a week; %d runs, the longest about %d history events", len(creates), len(runs), maxOf(runs))
}

// Postgres down for a week as the order is marked PAID: the local attempts stop
// after a minute and the regular activity waits out the rest.
func TestPostgresDownForAWeekKeepsTheHistoryBounded(t *testing.T) {
	start := time.Now() // activities' deadlines are on the real clock: never start in the past
	attempts := 0
	e, runs := outage(t, start, placeOrder(), func(e *env) {
		e.OnActivity(e.orders.MarkPaid, mock.Anything, mock.Anything).Return(
			func(_ context.Context, tr activities.Transition) (time.Time, error) {
				e.f.mu.Lock()
				defer e.f.mu.Unlock()
				attempts++
				if e.Now().Sub(start) < week {
					return time.Time{}, errors.New("connect: connection refused")
				}
				e.f.transitions = append(e.f.transitions, tr)
				return e.Now(), nil
			})
		e.onIntents(nil, []answer{succeeded()}, nil)
	})
	if res := e.result(t); res.Status != order.StatusPaid || len(e.f.transitions) != 1 {
		t.Fatalf("result %+v after transitions %+v", res, e.f.transitions)
	}
	if e.Now().Sub(start) < week {
		t.Fatalf("the outage ended after %v", e.Now().Sub(start))
	}
	checkBounded(t, runs)
	t.Logf("%d store attempts over a week; about %v history events", attempts, runs)
}

// A confirm that leaves the intent processing for a week: read until it settles,
// one activity.
func TestProcessingForAWeekKeepsTheHistoryBounded(t *testing.T) {
	start := time.Now() // activities' deadlines are on the real clock: never start in the past
	var rec *intents
	e, runs := outage(t, start, placeOrder(), func(e *env) {
		e.OnActivity(e.payments.AwaitIntent, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in activities.RetrieveInput) (activities.IntentState, error) {
				e.f.mu.Lock()
				defer e.f.mu.Unlock()
				rec.retrieves = append(rec.retrieves, in.Key)
				if e.Now().Sub(start) < week {
					return state(activities.IntentProcessing), temporal.NewApplicationError("processing", activities.ErrIntentPending)
				}
				return succeeded().st, nil
			})
		e.OnActivity(e.payments.RetrieveIntent, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in activities.RetrieveInput) (activities.IntentState, error) {
				e.f.mu.Lock()
				defer e.f.mu.Unlock()
				rec.retrieves = append(rec.retrieves, in.Key)
				if e.Now().Sub(start) < week {
					return state(activities.IntentProcessing), nil
				}
				return succeeded().st, nil
			})
		rec = e.onIntents(nil, []answer{{st: state(activities.IntentProcessing)}}, nil)
	})
	if res := e.result(t); res.Status != order.StatusPaid || len(rec.confirms) != 1 {
		t.Fatalf("result %+v after confirms %v", res, rec.confirms)
	}
	checkBounded(t, runs)
	t.Logf("%d reads over a week; about %v history events", len(rec.retrieves), runs)
}

// A cancel accepted while a refund's outcome stays unknown across runs: the update
// answers CancelPending when its run continues as new, and the next run ends the
// order CANCELLED once the refund goes through.
func TestCancelCarriedAcrossRuns(t *testing.T) {
	start := time.Now() // activities' deadlines are on the real clock: never start in the past
	in := placeOrder()
	in.CancelWindow = time.Hour
	var refunds []string
	var answers []error
	e, runs := outage(t, start, in, func(e *env) {
		e.OnActivity(e.payments.RefundIntent, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in activities.RefundIntentInput) (activities.RefundResult, error) {
				e.f.mu.Lock()
				defer e.f.mu.Unlock()
				refunds = append(refunds, in.Key)
				if e.Now().Sub(start) < 24*time.Hour {
					return activities.RefundResult{}, typed(activities.ErrPaymentUnknown)
				}
				return activities.RefundResult{Key: in.Key, RefundID: "re_1"}, nil
			})
		if len(answers) == 0 {
			e.cancelAt(t, time.Minute, func(_ OrderResult, err error) { answers = append(answers, err) })
		}
		e.onIntents(nil, []answer{succeeded()}, nil)
	})
	res := e.result(t)
	if res.Status != order.StatusCancelled || res.RefundID != "re_1" || len(runs) < 2 {
		t.Fatalf("result %+v after %d runs", res, len(runs))
	}
	var appErr *temporal.ApplicationError
	if len(answers) != 1 || !errors.As(answers[0], &appErr) || appErr.Type() != ErrCancelPending {
		t.Fatalf("cancel answers %v, want one %s", answers, ErrCancelPending)
	}
	checkBounded(t, runs)
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
