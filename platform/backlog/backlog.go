// Package backlog tells how far behind the fleet that serves a task queue is,
// so the ingresses take on no more than the fleet closes in a few seconds: the
// API answers 503 with a Retry-After before it starts anything, and the Kafka
// consumer waits, leaving the rest in the topic where it costs nothing. Above
// its capacity a fleet that admits everything slows down (every open workflow
// is work for the Temporal server), so what it admits is never paid sooner.
//
// The count is the fleet's, read from Temporal's visibility store once a
// second: workflows on the queue still open, but for those waiting for someone
// outside the fleet (Options.AtWork), against how many closed in the last ten
// seconds. A workflow known to be at work (Options.Working: an order whose
// charge is not sent yet) counts whatever its age, so one that waits in the task queue
// longer than a half-minute is still backlog; any other counts only within
// the half-minute after its start, as a workflow of another kind may wait for
// days on someone outside the fleet.
//
// The bound is shared by weight among the tenants asking: a tenant under its
// share is admitted even when another's flood holds the rest, so one tenant's
// flood never sheds another's orders. Work that can wait where it costs
// nothing (an event in its topic) is admitted under three quarters of the
// bound, leaving the last quarter to requests that must be answered now.
package backlog

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/workflowservice/v1"
)

// Counter counts workflows with a visibility query (client.Client).
type Counter interface {
	CountWorkflow(ctx context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error)
}

// Options bound the backlog.
type Options struct {
	// Queue is the task queue of the fleet.
	Queue string
	// Accept is how long new work may wait behind the backlog: the bound is what
	// the fleet closes in that time (0: no bound).
	Accept time.Duration
	// Floor is the least bound. An idle or small fleet's closing rate says little
	// about what it can do, so below Floor open workflows nothing is refused; nor
	// is anything while nothing has closed for five minutes.
	Floor int
	// AtWork is a visibility condition met by the open workflows the fleet has
	// work for; one waiting for someone outside it (a customer's 3-D Secure) is
	// no backlog. Empty: every open workflow.
	AtWork string
	// Working is a visibility condition met by the open workflows known to be
	// at work whatever their age: they count however long they have waited.
	// The others count only within the window after their start. Empty: none.
	Working string
	// TenantAttribute is the keyword search attribute holding a workflow's
	// tenant: each asking tenant's open workflows are counted by it (empty: no
	// shares, only the fleet's bound).
	TenantAttribute string
	// Weight is a tenant's share of the bound against the other tenants asking
	// (nil: all 1).
	Weight func(tenant string) float64
}

const (
	window   = 30 * time.Second // open workflows not known Working count within it of their start
	rateOver = 10 * time.Second // the closing rate is measured over it
	peakOver = 5 * time.Minute  // the bound keeps the highest rate read within it
	interval = time.Second      // how often the counts are read
	// maxTenants bounds the tenants whose own open workflows are read each
	// second: those that asked last. A tenant past them has no share, only the
	// fleet's bound.
	maxTenants = 8
	// maxAsking bounds the tenants remembered as asking, whose weights share the
	// bound.
	maxAsking = 1024
	// A refused request is told to come back within [1, 30] s.
	minRetry = 1
	maxRetry = 30
)

// Gauge is the fleet's backlog as last read, plus what this process admitted
// since (the next read counts those).
type Gauge struct {
	c   Counter
	o   Options
	now func() time.Time

	mu       sync.Mutex
	known    bool
	open     int     // open workflows started within the window, at the last read
	rate     float64 // workflows closed a second
	admitted int     // admitted by this process since the last read
	// peaks are the highest rate read in each minute of the last five. The
	// bound is the highest of them times Accept: a bound from the rate of the
	// moment would shrink with it whenever a workflow takes longer than Accept
	// (open = rate x its time), and admit less and less.
	peaks  [5]float64
	minute int64 // the minute the last read fell in
	// tenants are those that asked within the window, with their own counts;
	// weights is the sum of their weights.
	tenants map[string]*share
	weights float64
}

// share is one tenant's part of the backlog.
type share struct {
	asked    time.Time
	known    bool // open was read for this tenant at least once
	open     int
	admitted int
}

// New returns a gauge; Run keeps it current. A queue name with a quote or a
// backslash is refused: it goes into a visibility query.
func New(c Counter, o Options, now func() time.Time) (*Gauge, error) {
	if strings.ContainsAny(o.Queue, `'"\`) {
		return nil, fmt.Errorf("backlog: task queue %q: quotes and backslashes are not allowed", o.Queue)
	}
	if o.Weight == nil {
		o.Weight = func(string) float64 { return 1 }
	}
	return &Gauge{c: c, o: o, now: now, tenants: map[string]*share{}}, nil
}

// Run reads the counts every second until ctx ends. A failed read forgets the
// last one: nothing is refused on a count that may be stale (a start then fails
// on its own if Temporal is down).
func (g *Gauge) Run(ctx context.Context, logger *slog.Logger) {
	if g.o.Accept <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false // said once when reads start failing, once when they recover
	for {
		err := g.Refresh(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			logger.Warn("backlog: the fleet's counts are not read; admitting without them until they are", "err", err)
			failing = true
		case err == nil && failing:
			logger.Info("backlog: the fleet's counts are read again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Register exports the counts as last read: orderflow_fleet_open_workflows and
// orderflow_fleet_closing_rate.
func (g *Gauge) Register(reg prometheus.Registerer) error {
	read := func(f func() float64) func() float64 {
		return func() float64 { g.mu.Lock(); defer g.mu.Unlock(); return f() }
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "orderflow_fleet_open_workflows",
			Help: "Open workflows on the task queue at work (an order not yet charged whatever its age, any other within 30 s of its start), as last read (the backlog the ingresses admit by)."},
			read(func() float64 { return float64(g.open) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "orderflow_fleet_closing_rate",
			Help: "Workflows on the task queue closed a second over the last 10 s, as last read."},
			read(func() float64 { return g.rate })),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("backlog metrics: %w", err)
		}
	}
	return nil
}

// Refresh reads the counts once: the fleet's, then each asking tenant's.
func (g *Gauge) Refresh(ctx context.Context) error {
	now := g.now().UTC()
	open, err := g.count(ctx, g.openQuery(now, ""))
	if err == nil {
		var closed int
		closed, err = g.count(ctx, fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus != 'Running' AND CloseTime > '%s'",
			g.o.Queue, now.Add(-rateOver).Format(time.RFC3339Nano)))
		g.set(err == nil, open, float64(closed)/rateOver.Seconds())
	} else {
		g.set(false, 0, 0)
	}
	if err != nil {
		return err
	}
	for _, tenant := range g.asking(now) {
		n, err := g.count(ctx, g.openQuery(now, tenant))
		if err != nil { // a share unread would refuse its tenant on the fleet's bound alone
			g.set(false, 0, 0)
			return err
		}
		g.setTenant(tenant, n)
	}
	return nil
}

// openQuery counts the open workflows at work, the tenant's only unless it is
// empty.
func (g *Gauge) openQuery(now time.Time, tenant string) string {
	young := fmt.Sprintf("StartTime > '%s'", now.Add(-window).Format(time.RFC3339Nano))
	if g.o.Working != "" {
		young = "(" + young + " OR (" + g.o.Working + "))"
	}
	query := fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running' AND %s", g.o.Queue, young)
	if tenant != "" {
		query += fmt.Sprintf(" AND %s = '%s'", g.o.TenantAttribute, tenant)
	}
	if g.o.AtWork != "" {
		query += " AND (" + g.o.AtWork + ")"
	}
	return query
}

// asking forgets the tenants that have not asked within the window and names
// those whose counts are read: the maxTenants that asked last.
func (g *Gauge) asking(now time.Time) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var names []string
	for name, s := range g.tenants {
		if now.Sub(s.asked) > window {
			delete(g.tenants, name)
			g.weights -= g.o.Weight(name)
			continue
		}
		names = append(names, name)
	}
	if len(g.tenants) == 0 {
		g.weights = 0 // no sum of additions and removals drifts
	}
	if g.o.TenantAttribute == "" {
		return nil
	}
	slices.SortFunc(names, func(a, b string) int { return g.tenants[b].asked.Compare(g.tenants[a].asked) })
	return names[:min(len(names), maxTenants)]
}

func (g *Gauge) setTenant(tenant string, open int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.tenants[tenant]; ok {
		s.open, s.known, s.admitted = open, true, 0
	}
}

func (g *Gauge) set(known bool, open int, rate float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// A tenant's share keeps its last count, and what it admitted since, until
	// its own count is read: the fleet's is read first, and a share unknown in
	// between would refuse its tenant for another's flood.
	g.known, g.open, g.rate, g.admitted = known, open, rate, 0
	minute := g.now().Unix() / int64(peakOver/time.Duration(len(g.peaks))/time.Second)
	for m := max(g.minute+1, minute-int64(len(g.peaks))+1); m <= minute; m++ {
		g.peaks[m%int64(len(g.peaks))] = 0 // minutes gone by since the last read
	}
	g.minute = minute
	i := minute % int64(len(g.peaks))
	g.peaks[i] = max(g.peaks[i], rate)
}

// peak is the highest closing rate read in the last five minutes.
func (g *Gauge) peak() float64 {
	return max(g.rate, slices.Max(g.peaks[:]))
}

func (g *Gauge) count(ctx context.Context, query string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, interval)
	defer cancel()
	resp, err := g.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return 0, fmt.Errorf("count workflows: %w", err)
	}
	return int(resp.GetCount()), nil
}

// Admit takes one more piece of the tenant's new work if the backlog is under
// its bound, or the tenant's own under its share of it; otherwise it says in
// how many seconds the fleet will have closed the excess at the rate of the
// moment.
func (g *Gauge) Admit(tenant string) (retryAfter int, ok bool) {
	return g.admit(tenant, 1)
}

// held is the part of the bound open to work that waits where it costs
// nothing: an event in its topic leaves the rest to requests that must be
// answered now.
const held = 0.75

// admit is Admit against part of the bound.
func (g *Gauge) admit(tenant string, part float64) (retryAfter int, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.ask(tenant)
	// Nothing closed in five minutes: no fleet at work, or none at all. Work
	// admitted waits in Temporal until one comes; a refusal would only become an
	// order lost at a client that stops retrying. A fleet that closed work within
	// them and closes none now has stalled (a task queue that stopped
	// dispatching, workers frozen): admitting all would leave every wait to run
	// out once it moves again.
	peak := g.peak()
	if !g.known || g.o.Accept <= 0 || peak <= 0 {
		return 0, true
	}
	bound := max(1, part*max(float64(g.o.Floor), peak*g.o.Accept.Seconds())) // one at least, held or not
	over := float64(g.open+g.admitted+1) - bound
	if over <= 0 || (s.known && float64(s.open+s.admitted+1) <= bound*g.weighed(tenant)) {
		g.admitted++
		s.admitted++
		return 0, true
	}
	if g.rate <= 0 { // stalled: when it moves again is not known
		return maxRetry, false
	}
	return min(max(int(math.Ceil(over/g.rate)), minRetry), maxRetry), false
}

// ask notes that tenant asked now. A name that cannot go into a query, or one
// more tenant than maxAsking, gets no share (the fleet's bound only).
func (g *Gauge) ask(tenant string) *share {
	s, ok := g.tenants[tenant]
	if !ok {
		s = &share{}
		if strings.ContainsAny(tenant, `'"\`) || len(g.tenants) >= maxAsking {
			return s
		}
		g.tenants[tenant] = s
		g.weights += g.o.Weight(tenant)
	}
	s.asked = g.now()
	return s
}

// weighed is the tenant's share of the bound: its weight over those of the
// tenants asking.
func (g *Gauge) weighed(tenant string) float64 {
	if g.weights <= 0 {
		return 0
	}
	return g.o.Weight(tenant) / g.weights
}

// Wait blocks until the tenant's work that can wait is admitted (under three
// quarters of the bound) or ctx ends.
func (g *Gauge) Wait(ctx context.Context, tenant string) error {
	for {
		if _, ok := g.admit(tenant, held); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the fleet's backlog: %w", ctx.Err())
		case <-time.After(interval / 4):
		}
	}
}
