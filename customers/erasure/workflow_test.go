package erasure

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/orderflow/orderflow/customers/receipt"
	"github.com/orderflow/orderflow/platform/custkeys"
)

// steps fakes an erasure's activities and records each call: its name and the
// test clock's time when it ran.
type steps struct {
	env  *testsuite.TestWorkflowEnvironment
	acts *Activities

	open  []int  // what Open answers, call by call; the last one from then on
	fail  string // the step that fails for good
	flaky int    // the first calls of Open that fail and may be retried
	found Found
	keys  custkeys.Destroyed
	sign  receipt.Signed

	mu     sync.Mutex
	calls  []string
	times  []time.Time
	signed []any // Sign's found, keys and at
}

func newSteps(t *testing.T) *steps {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	st := &steps{env: s.NewTestWorkflowEnvironment(), acts: &Activities{},
		found: Found{Orders: 3, ReplayBodies: 2, Events: 1, Refunds: 1, Letters: 4, Histories: 4},
		keys:  custkeys.Destroyed{Keys: []custkeys.DestroyedKey{{ID: "ck_0123456789abcdef0123456789abcdef", Fingerprint: "ab12", At: at}}},
		sign:  receipt.Signed{Receipt: []byte(`{"id":"era_01"}`), Signature: "c2ln"}}
	st.env.RegisterWorkflow(EraseCustomer)
	st.env.RegisterActivity(st.acts)
	return st
}

// called records a call and fails it for good if it is the step to fail.
func (s *steps) called(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, name)
	s.times = append(s.times, s.env.Now())
	switch {
	case name == s.fail:
		return temporal.NewNonRetryableApplicationError(name+" failed", "TestFailure", nil)
	case name == "ErasureOpen" && len(s.calls) <= s.flaky:
		return errors.New("database unavailable")
	}
	return nil
}

func (s *steps) run(in Input) (receipt.Signed, error) {
	s.env.OnActivity(s.acts.ErasureOpen, mock.Anything, mock.Anything).Return(func(context.Context, Input) (int, error) {
		s.mu.Lock()
		n := s.open[min(s.count("ErasureOpen"), len(s.open)-1)]
		s.mu.Unlock()
		return n, s.called("ErasureOpen")
	})
	s.env.OnActivity(s.acts.ErasureScrub, mock.Anything, mock.Anything).Return(func(context.Context, Input) (Found, error) {
		return s.found, s.called("ErasureScrub")
	})
	s.env.OnActivity(s.acts.ErasureDestroy, mock.Anything, mock.Anything).Return(func(context.Context, Input) (custkeys.Destroyed, error) {
		return s.keys, s.called("ErasureDestroy")
	})
	s.env.OnActivity(s.acts.ErasureSign, mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ Input, f Found, d custkeys.Destroyed, at time.Time) (receipt.Signed, error) {
			s.mu.Lock()
			s.signed = []any{f, d, at}
			s.mu.Unlock()
			return s.sign, s.called("ErasureSign")
		})
	s.env.ExecuteWorkflow(EraseCustomer, in)
	if !s.env.IsWorkflowCompleted() {
		return receipt.Signed{}, errors.New("the workflow did not complete")
	}
	var out receipt.Signed
	if err := s.env.GetWorkflowError(); err != nil {
		return out, err
	}
	return out, s.env.GetWorkflowResult(&out)
}

// count is the calls of name so far; s.mu is held.
func (s *steps) count(name string) int {
	n := 0
	for _, c := range s.calls {
		if c == name {
			n++
		}
	}
	return n
}

func (s *steps) at(name string) time.Time {
	for i := len(s.calls) - 1; i >= 0; i-- {
		if s.calls[i] == name {
			return s.times[i]
		}
	}
	return time.Time{}
}

var testInput = Input{Tenant: "acme", WorkflowID: "erasure:acme:http:k1", ID: "era_01", CustomerHash: []byte{1, 2, 3}}

// While the customer's money can still move the erasure waits, looking again
// later and later; then it scrubs, destroys the key, waits out other processes'
// caches, and signs what it found and destroyed.
func TestTheErasureWaitsForOpenOrdersThenScrubsDestroysAndSigns(t *testing.T) {
	s := newSteps(t)
	s.open = []int{2, 1, 1, 0}
	start := s.env.Now()
	got, err := s.run(testInput)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ErasureOpen", "ErasureOpen", "ErasureOpen", "ErasureOpen", "ErasureScrub", "ErasureDestroy", "ErasureSign"}; !reflect.DeepEqual(s.calls, want) {
		t.Fatalf("calls %v, want %v", s.calls, want)
	}
	// Each look waits for a timer, each longer than the one before: 5 s, 10 s, 20 s.
	for i, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second} {
		if gap := s.times[i+1].Sub(s.times[i]); gap < want || gap >= want+time.Second {
			t.Errorf("look %d came %s after the one before, want %s", i+2, gap, want)
		}
	}
	if first := s.times[0].Sub(start); first >= time.Second {
		t.Errorf("the first look came %s after the start, want at once", first)
	}
	if gap := s.at("ErasureSign").Sub(s.at("ErasureDestroy")); gap < custkeys.CacheTTL() {
		t.Errorf("signed %s after the keys were destroyed, want at least the cache's %s", gap, custkeys.CacheTTL())
	}
	if want := []any{s.found, s.keys, s.at("ErasureSign")}; !reflect.DeepEqual(s.signed[:2], want[:2]) || !s.signed[2].(time.Time).Equal(s.at("ErasureSign")) {
		t.Errorf("Sign got %+v, want Scrub's found, Destroy's keys and the time: %+v", s.signed, want)
	}
	if !reflect.DeepEqual(got, s.sign) {
		t.Fatalf("the workflow answered %+v, want Sign's %+v", got, s.sign)
	}
}

func TestAnErasureWithNothingOpenDoesNotWait(t *testing.T) {
	s := newSteps(t)
	s.open = []int{0}
	start := s.env.Now()
	if _, err := s.run(testInput); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ErasureOpen", "ErasureScrub", "ErasureDestroy", "ErasureSign"}; !reflect.DeepEqual(s.calls, want) {
		t.Fatalf("calls %v, want %v", s.calls, want)
	}
	if took := s.at("ErasureDestroy").Sub(start); took >= time.Second {
		t.Fatalf("destroyed the keys %s after the start, want at once", took)
	}
}

// The waits double up to maxWait and stay there.
func TestTheWaitBetweenLooksIsBounded(t *testing.T) {
	s := newSteps(t)
	s.open = []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}
	if _, err := s.run(testInput); err != nil {
		t.Fatal(err)
	}
	if n := s.count("ErasureOpen"); n != len(s.open) {
		t.Fatalf("%d looks, want %d", n, len(s.open))
	}
	last := s.times[len(s.open)-1].Sub(s.times[len(s.open)-2])
	if last < maxWait || last >= maxWait+time.Second {
		t.Fatalf("the last wait was %s, want %s", last, maxWait)
	}
}

// A step that fails for good fails the erasure, and no later step runs: above
// all, no key is destroyed after Open or Scrub failed.
func TestAStepThatFailsForGoodStopsTheErasure(t *testing.T) {
	for _, tc := range []struct {
		fail string
		want []string
	}{
		{"ErasureOpen", []string{"ErasureOpen"}},
		{"ErasureScrub", []string{"ErasureOpen", "ErasureScrub"}},
		{"ErasureDestroy", []string{"ErasureOpen", "ErasureScrub", "ErasureDestroy"}},
	} {
		t.Run(tc.fail, func(t *testing.T) {
			s := newSteps(t)
			s.open, s.fail = []int{0}, tc.fail
			_, err := s.run(testInput)
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Type() != "TestFailure" {
				t.Fatalf("workflow error %v, want %s's failure", err, tc.fail)
			}
			if !reflect.DeepEqual(s.calls, tc.want) {
				t.Fatalf("calls %v, want %v", s.calls, tc.want)
			}
		})
	}
}

// A step that fails for a while (the database restarting) is retried: the
// erasure goes on.
func TestAStepThatFailsForAWhileIsRetried(t *testing.T) {
	s := newSteps(t)
	s.open, s.flaky = []int{0}, 2
	if _, err := s.run(testInput); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ErasureOpen", "ErasureOpen", "ErasureOpen", "ErasureScrub", "ErasureDestroy", "ErasureSign"}; !reflect.DeepEqual(s.calls, want) {
		t.Fatalf("calls %v, want %v", s.calls, want)
	}
}

// A customer that never had a key (nothing sealed, nothing cached anywhere) is
// erased without the keys' cache wait; one that had keys waits it.
func TestACustomerWithoutKeysIsErasedWithoutTheCacheWait(t *testing.T) {
	s := newSteps(t)
	s.open = []int{0}
	s.keys = custkeys.Destroyed{}
	if _, err := s.run(testInput); err != nil {
		t.Fatal(err)
	}
	if gap := s.at("ErasureSign").Sub(s.at("ErasureDestroy")); gap >= time.Second {
		t.Fatalf("signed %s after destroying no key, want at once", gap)
	}
}
