package backlog

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
)

// counts answers the two visibility queries with what the test set.
type counts struct {
	mu           sync.Mutex
	open, closed int64
	err          error
	queries      []string
}

func (c *counts) CountWorkflow(_ context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries = append(c.queries, req.GetQuery())
	if c.err != nil {
		return nil, c.err
	}
	if strings.Contains(req.GetQuery(), "ExecutionStatus = 'Running'") {
		return &workflowservice.CountWorkflowExecutionsResponse{Count: c.open}, nil
	}
	return &workflowservice.CountWorkflowExecutionsResponse{Count: c.closed}, nil
}

func (c *counts) set(open, closed int64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open, c.closed, c.err = open, closed, err
}

var at = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// read has g read open and closed from c.
func read(t *testing.T, g *Gauge, c *counts, open, closed int64) {
	t.Helper()
	c.set(open, closed, nil)
	if err := g.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func newGauge(t *testing.T, c *counts, o Options) *Gauge {
	t.Helper()
	g, err := New(c, o, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestTheQueriesNameTheQueueAndTheirWindows(t *testing.T) {
	c := &counts{}
	g := newGauge(t, c, Options{Queue: "orders", Accept: 5 * time.Second, Floor: 10})
	if err := g.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"TaskQueue = 'orders' AND ExecutionStatus = 'Running' AND StartTime > '2026-12-06T11:59:30Z'",
		"TaskQueue = 'orders' AND ExecutionStatus != 'Running' AND CloseTime > '2026-12-06T11:59:50Z'",
	}
	if strings.Join(c.queries, "\n") != strings.Join(want, "\n") {
		t.Fatalf("queries:\n%s\nwant:\n%s", strings.Join(c.queries, "\n"), strings.Join(want, "\n"))
	}
	c.queries = nil
	g = newGauge(t, c, Options{Queue: "orders", Accept: 5 * time.Second, AtWork: "S IS NULL OR S != 'W'"})
	if err := g.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := want[0] + " AND (S IS NULL OR S != 'W')"; c.queries[0] != want {
		t.Fatalf("open with AtWork: %s, want %s", c.queries[0], want)
	}
	if _, err := New(c, Options{Queue: "orders' OR TaskQueue != 'x"}, time.Now); err == nil {
		t.Fatal("a queue with a quote was taken into the query")
	}
}

func TestWorkOverWhatTheFleetClosesInTheAcceptedTimeIsRefused(t *testing.T) {
	c := &counts{}
	g := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10})
	// 20 closed in 10 s: 2 a second, so 5 s of it is 10; 8 open leave room for 2.
	read(t, g, c, 8, 20)
	for i := range 2 {
		if _, ok := g.Admit(); !ok {
			t.Fatalf("admission %d of 2 under the bound refused", i+1)
		}
	}
	after, ok := g.Admit()
	if ok {
		t.Fatal("the 11th open workflow admitted over a bound of 10")
	}
	if after != 1 {
		t.Fatalf("Retry-After %d, want 1 (one over at 2 a second)", after)
	}
	// The fleet is far behind: 100 over at 2 a second is 50 s, told 30 at most.
	read(t, g, c, 110, 20)
	if after, ok := g.Admit(); ok || after != maxRetry {
		t.Fatalf("100 over: (%d, %v), want (%d, false)", after, ok, maxRetry)
	}
	// A faster fleet has a higher bound: 100 a second for 5 s is 500.
	read(t, g, c, 110, 1000)
	if _, ok := g.Admit(); !ok {
		t.Fatal("110 open refused against a bound of 500")
	}
}

func TestTheFloorHoldsWhenLittleClosesAndNothingIsRefusedWhenNothingCloses(t *testing.T) {
	c := &counts{}
	g := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10})
	c.set(9, 1, nil) // one closed in 10 s: a bound of 0.5, under the floor
	_ = g.Refresh(context.Background())
	if _, ok := g.Admit(); !ok {
		t.Fatal("the 10th open workflow refused under a floor of 10")
	}
	if after, ok := g.Admit(); ok || after != 10 {
		t.Fatalf("one over the floor at 0.1 a second: (%d, %v), want (10, false)", after, ok)
	}
	// No worker at all: what is admitted waits in Temporal for one.
	read(t, g, c, 1000, 0)
	if _, ok := g.Admit(); !ok {
		t.Fatal("refused while nothing closes")
	}
}

func TestACountNotReadAdmitsAndNoBoundAdmits(t *testing.T) {
	c := &counts{}
	g := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 1})
	read(t, g, c, 1000, 10)
	if _, ok := g.Admit(); ok {
		t.Fatal("1000 open admitted over a bound of 5")
	}
	c.set(1000, 10, errors.New("visibility unavailable"))
	if err := g.Refresh(context.Background()); err == nil {
		t.Fatal("a failed count was not reported")
	}
	if _, ok := g.Admit(); !ok {
		t.Fatal("refused on a count that could not be read")
	}
	off := newGauge(t, &counts{open: 1000, closed: 10}, Options{Queue: "q", Floor: 1})
	_ = off.Refresh(context.Background())
	if _, ok := off.Admit(); !ok {
		t.Fatal("refused with BACKLOG_ACCEPT 0")
	}
}

func TestWaitGoesOnOnceTheBacklogFallsAndEndsWithItsContext(t *testing.T) {
	c := &counts{}
	g := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 1})
	read(t, g, c, 5, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait over the bound: %v, want its context's end", err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait(context.Background()) }()
	read(t, g, c, 0, 1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not go on once the backlog fell under the bound")
	}
}

// A fleet whose workflows take longer than Accept closes fewer a second when
// admission is tight, and a bound from that rate would tighten further: the
// bound keeps the highest rate of the last five minutes.
func TestTheBoundKeepsTheRateTheFleetShowedForFiveMinutes(t *testing.T) {
	c := &counts{}
	now := at
	g, err := New(c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	read(t, g, c, 0, 100) // 10 a second: a bound of 50
	now = now.Add(4 * time.Minute)
	read(t, g, c, 40, 20) // 2 a second now: 40 open are under the bound of the peak
	if _, ok := g.Admit(); !ok {
		t.Fatal("refused under the bound of the rate four minutes ago")
	}
	now = now.Add(2 * time.Minute)
	read(t, g, c, 40, 20)
	if after, ok := g.Admit(); ok || after != 16 {
		t.Fatalf("six minutes on, at 2 a second: (%d, %v), want (16, false): 31 over", after, ok)
	}
}
