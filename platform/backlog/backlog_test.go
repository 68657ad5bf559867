package backlog

import (
	"context"
	"errors"
	"slices"
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
	byTenant     map[string]int64 // open workflows of a tenant (attribute T)
	err          error
	queries      []string
	// slow, when set, holds every tenant's count until it is closed.
	slow chan struct{}
}

func (c *counts) CountWorkflow(_ context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	c.mu.Lock()
	c.queries = append(c.queries, req.GetQuery())
	slow := c.slow
	c.mu.Unlock()
	if slow != nil && strings.Contains(req.GetQuery(), " AND T = '") {
		<-slow
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	for tenant, n := range c.byTenant {
		if strings.Contains(req.GetQuery(), " AND T = '"+tenant+"'") {
			return &workflowservice.CountWorkflowExecutionsResponse{Count: n}, nil
		}
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

// newClocked is newGauge on a clock the test moves.
func newClocked(t *testing.T, c *counts, o Options) (*Gauge, *time.Time) {
	t.Helper()
	now := at
	g, err := New(c, o, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	return g, &now
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
	c.queries = nil
	g = newGauge(t, c, Options{Queue: "orders", Accept: 5 * time.Second, Working: "S IN ('P')"})
	if err := g.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := "TaskQueue = 'orders' AND ExecutionStatus = 'Running' AND (StartTime > '2026-12-06T11:59:30Z' OR (S IN ('P')))"; c.queries[0] != want {
		t.Fatalf("open with Working: %s, want %s", c.queries[0], want)
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
		if _, ok := g.Admit("t"); !ok {
			t.Fatalf("admission %d of 2 under the bound refused", i+1)
		}
	}
	after, ok := g.Admit("t")
	if ok {
		t.Fatal("the 11th open workflow admitted over a bound of 10")
	}
	if after != 1 {
		t.Fatalf("Retry-After %d, want 1 (one over at 2 a second)", after)
	}
	// The fleet is far behind: 100 over at 2 a second is 50 s, told 30 at most.
	read(t, g, c, 110, 20)
	if after, ok := g.Admit("t"); ok || after != maxRetry {
		t.Fatalf("100 over: (%d, %v), want (%d, false)", after, ok, maxRetry)
	}
	// A faster fleet has a higher bound: 100 a second for 5 s is 500.
	read(t, g, c, 110, 1000)
	if _, ok := g.Admit("t"); !ok {
		t.Fatal("110 open refused against a bound of 500")
	}
}

func TestTheFloorHoldsWhenLittleClosesAndNothingIsRefusedWhenNothingCloses(t *testing.T) {
	c := &counts{}
	g := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10})
	c.set(9, 1, nil) // one closed in 10 s: a bound of 0.5, under the floor
	_ = g.Refresh(context.Background())
	if _, ok := g.Admit("t"); !ok {
		t.Fatal("the 10th open workflow refused under a floor of 10")
	}
	if after, ok := g.Admit("t"); ok || after != 10 {
		t.Fatalf("one over the floor at 0.1 a second: (%d, %v), want (10, false)", after, ok)
	}
	// No worker at all: what is admitted waits in Temporal for one.
	idle := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10})
	read(t, idle, c, 1000, 0)
	if _, ok := idle.Admit("t"); !ok {
		t.Fatal("refused while nothing has closed")
	}
}

// A fleet that closed 10 a second and then closes none has stalled (its task
// queue stopped dispatching, its workers froze): work over the bound is
// refused, told to come back in the longest wait, until the fleet closes work
// again or has closed none for five minutes (no fleet at work).
func TestAFleetThatStopsClosingHasStalledAndIsNotIdle(t *testing.T) {
	c := &counts{}
	g, now := newClocked(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10})
	read(t, g, c, 20, 100) // 10 a second: a bound of 50
	*now = now.Add(20 * time.Second)
	read(t, g, c, 1000, 0)
	if after, ok := g.Admit("t"); ok || after != maxRetry {
		t.Fatalf("1000 open and none closing after 10 a second: (%d, %v), want (%d, false)", after, ok, maxRetry)
	}
	if err := g.Wait(canceled(), "t"); err == nil {
		t.Fatal("an event admitted while the fleet is stalled over its bound")
	}
	*now = now.Add(10 * time.Second)
	read(t, g, c, 1000, 30) // moving again, at 3 a second
	if after, ok := g.Admit("t"); ok || after != 30 {
		t.Fatalf("951 over at 3 a second: (%d, %v), want (30, false)", after, ok)
	}
	read(t, g, c, 40, 30)
	if _, ok := g.Admit("t"); !ok {
		t.Fatal("refused under the bound once the fleet closed work again")
	}
	*now = now.Add(6 * time.Minute)
	read(t, g, c, 1000, 0)
	if _, ok := g.Admit("t"); !ok {
		t.Fatal("refused after five minutes with nothing closed: no fleet is at work")
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestACountNotReadAdmitsAndNoBoundAdmits(t *testing.T) {
	c := &counts{}
	g := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 1})
	read(t, g, c, 1000, 10)
	if _, ok := g.Admit("t"); ok {
		t.Fatal("1000 open admitted over a bound of 5")
	}
	c.set(1000, 10, errors.New("visibility unavailable"))
	if err := g.Refresh(context.Background()); err == nil {
		t.Fatal("a failed count was not reported")
	}
	if _, ok := g.Admit("t"); !ok {
		t.Fatal("refused on a count that could not be read")
	}
	off := newGauge(t, &counts{open: 1000, closed: 10}, Options{Queue: "q", Floor: 1})
	_ = off.Refresh(context.Background())
	if _, ok := off.Admit("t"); !ok {
		t.Fatal("refused with BACKLOG_ACCEPT 0")
	}
}

func TestWaitGoesOnOnceTheBacklogFallsAndEndsWithItsContext(t *testing.T) {
	c := &counts{}
	g := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 1})
	read(t, g, c, 5, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx, "t"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait over the bound: %v, want its context's end", err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait(context.Background(), "t") }()
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
	g, now := newClocked(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10})
	read(t, g, c, 0, 100) // 10 a second: a bound of 50
	*now = now.Add(4 * time.Minute)
	read(t, g, c, 40, 20) // 2 a second now: 40 open are under the bound of the peak
	if _, ok := g.Admit("t"); !ok {
		t.Fatal("refused under the bound of the rate four minutes ago")
	}
	*now = now.Add(2 * time.Minute)
	read(t, g, c, 40, 20)
	if after, ok := g.Admit("t"); ok || after != 16 {
		t.Fatalf("six minutes on, at 2 a second: (%d, %v), want (16, false): 31 over", after, ok)
	}
}

// One tenant's flood holds the fleet's whole bound; another tenant under its
// weighted share is still admitted, up to that share.
func TestATenantUnderItsShareIsAdmittedWhileAnotherHoldsTheBound(t *testing.T) {
	c := &counts{byTenant: map[string]int64{"a": 10, "b": 0}}
	weights := map[string]float64{"a": 2, "b": 1}
	g := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10, TenantAttribute: "T",
		Weight: func(tenant string) float64 { return weights[tenant] }})
	read(t, g, c, 0, 20) // 2 a second: a bound of 10
	for _, tenant := range []string{"a", "b", "x'"} {
		g.Admit(tenant) // they ask: the next read counts each
	}
	read(t, g, c, 10, 20) // a's 10 (and the 2 admitted) fill the bound
	if _, ok := g.Admit("a"); ok {
		t.Fatal("the flooding tenant admitted over the bound and over its share")
	}
	// b weighs 1 of 3 (a 2, b 1; a name that cannot go into a query has no
	// share): 10/3 of the bound, so 3 of b's are admitted and the 4th is not.
	for i := range 3 {
		if _, ok := g.Admit("b"); !ok {
			t.Fatalf("b's order %d of 3 under its share refused", i+1)
		}
	}
	if after, ok := g.Admit("b"); ok || after != 2 {
		t.Fatalf("b's 4th, over its share: (%d, %v), want (2, false): 4 over at 2 a second", after, ok)
	}
	for _, q := range c.queries {
		if strings.Contains(q, "x'") {
			t.Fatalf("a tenant with a quote went into a query: %s", q)
		}
	}
	if want := "TaskQueue = 'q' AND ExecutionStatus = 'Running' AND StartTime > '2026-12-06T11:59:30Z' AND T = 'b'"; !slices.Contains(c.queries, want) {
		t.Fatalf("no count of b's open workflows among %q", c.queries)
	}
}

// Work that waits where it costs nothing (an event in its topic) is admitted
// under three quarters of the bound; a request to be answered now, under all
// of it.
func TestHeldWorkLeavesAQuarterOfTheBoundToRequests(t *testing.T) {
	c := &counts{}
	g := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 1})
	read(t, g, c, 15, 40) // 4 a second: a bound of 20, 15 for held work
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx, "t"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held work at 16 of a held bound of 15: %v, want its context's end", err)
	}
	for i := range 5 {
		if _, ok := g.Admit("t"); !ok {
			t.Fatalf("request %d of the 5 under the whole bound refused", i+1)
		}
	}
	if _, ok := g.Admit("t"); ok {
		t.Fatal("the 21st admitted over a bound of 20")
	}
}

// A tenant that has not asked for 30 s shares the bound no more: the one still
// asking has all of it.
func TestATenantThatStoppedAskingSharesTheBoundNoMore(t *testing.T) {
	c := &counts{byTenant: map[string]int64{"a": 10, "b": 6}}
	g, now := newClocked(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10, TenantAttribute: "T"})
	read(t, g, c, 0, 20) // a bound of 10
	g.Admit("a")
	g.Admit("b")
	read(t, g, c, 16, 20)
	if _, ok := g.Admit("b"); ok {
		t.Fatal("b admitted at 7 over its half of a bound of 10")
	}
	*now = now.Add(31 * time.Second)
	read(t, g, c, 16, 20) // a's count is not read: it stopped asking
	g.Admit("b")          // b asks on; the next read counts it
	read(t, g, c, 16, 20)
	for i := range 4 { // b's 6 open and 4 more are the whole bound
		if _, ok := g.Admit("b"); !ok {
			t.Fatalf("b's order %d of 4 refused under the whole bound, a gone", i+1)
		}
	}
	if _, ok := g.Admit("b"); ok {
		t.Fatal("b admitted at 11 over the whole bound of 10")
	}
	for _, q := range c.queries[len(c.queries)-3:] {
		if strings.Contains(q, "T = 'a'") {
			t.Fatalf("a's count read after it stopped asking: %s", q)
		}
	}
}

// The fleet's counts are read before each tenant's: meanwhile a tenant keeps
// its share from the last read. Before, its share was unknown until its own
// count came back, and on a busy machine that was most of each second: the
// light tenant was refused for the other's flood.
func TestATenantKeepsItsShareWhileItsCountIsRead(t *testing.T) {
	c := &counts{byTenant: map[string]int64{"a": 10, "b": 0}}
	g := newGauge(t, c, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10, TenantAttribute: "T"})
	read(t, g, c, 0, 20) // a bound of 10
	g.Admit("a")
	g.Admit("b")
	read(t, g, c, 10, 20) // a's 10 fill it
	c.mu.Lock()
	c.slow, c.queries = make(chan struct{}), nil
	c.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- g.Refresh(context.Background()) }()
	for reading := false; !reading; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		reading = len(c.queries) == 3 // the fleet's two, and the first tenant's
		c.mu.Unlock()
	}
	if _, ok := g.Admit("b"); !ok {
		t.Fatal("b refused under its share while its count was being read")
	}
	close(c.slow)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
