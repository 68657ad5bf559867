// Package backlog tells how far behind the fleet that serves a task queue is,
// so the ingresses take on no more than the fleet gets to in a few seconds: the
// API answers 503 with a Retry-After before it starts anything, and the Kafka
// consumer waits, leaving the rest in the topic where it costs nothing. Above
// its capacity a fleet that admits everything slows down (every open workflow
// is work for the Temporal server), so what it admits is never paid sooner.
//
// The backlog is the fleet's, read from Temporal once a second: the tasks of the
// queue (workflow and activity) waiting for a worker, against the rate workers
// take them. A workflow waiting for its customer has no task waiting, so it is
// no backlog.
package backlog

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
)

// Describer describes a task queue (client.Client's WorkflowService()).
type Describer interface {
	DescribeTaskQueue(ctx context.Context, req *workflowservice.DescribeTaskQueueRequest, opts ...grpc.CallOption) (*workflowservice.DescribeTaskQueueResponse, error)
}

// Options bound the backlog.
type Options struct {
	// Namespace and Queue are the fleet's task queue.
	Namespace, Queue string
	// Accept is how long new work may wait behind the backlog: the bound is the
	// tasks the fleet takes in that time (0: no bound).
	Accept time.Duration
	// Floor is the least bound, in tasks. An idle or small fleet's rate says
	// little about what it can do, so below Floor waiting tasks nothing is
	// refused; nor is anything while no worker takes any (none polls, or none
	// is at work: what is admitted waits in Temporal for one).
	Floor int
}

const (
	interval = time.Second // how often the backlog is read
	// A refused request is told to come back within [1, 30] s.
	minRetry = 1
	maxRetry = 30
)

// Gauge is the fleet's backlog as last read, plus what this process admitted
// since (the next read counts those).
type Gauge struct {
	d Describer
	o Options

	mu       sync.Mutex
	known    bool
	waiting  int     // tasks waiting for a worker, at the last read
	rate     float64 // tasks workers take a second
	admitted int     // admitted by this process since the last read
}

// New returns a gauge; Run keeps it current.
func New(d Describer, o Options) *Gauge {
	return &Gauge{d: d, o: o}
}

// Run reads the backlog every second until ctx ends. A failed read forgets the
// last one: nothing is refused on a backlog that may be stale (a start then
// fails on its own if Temporal is down).
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
			logger.Warn("backlog: the fleet's backlog is not read; admitting without it until it is", "err", err)
			failing = true
		case err == nil && failing:
			logger.Info("backlog: the fleet's backlog is read again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Register exports the backlog as last read: orderflow_fleet_waiting_tasks and
// orderflow_fleet_task_rate.
func (g *Gauge) Register(reg prometheus.Registerer) error {
	read := func(f func() float64) func() float64 {
		return func() float64 { g.mu.Lock(); defer g.mu.Unlock(); return f() }
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "orderflow_fleet_waiting_tasks",
			Help: "Tasks of the task queue (workflow and activity) waiting for a worker, as last read: the backlog the ingresses admit by."},
			read(func() float64 { return float64(g.waiting) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "orderflow_fleet_task_rate",
			Help: "Tasks of the task queue workers take a second, as last read."},
			read(func() float64 { return g.rate })),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("backlog metrics: %w", err)
		}
	}
	return nil
}

// Refresh reads the backlog once.
func (g *Gauge) Refresh(ctx context.Context) error {
	waiting, rate, served := 0, 0.0, false
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		st, pollers, err := g.describe(ctx, typ)
		if err != nil {
			g.set(false, 0, 0)
			return err
		}
		waiting += int(st.GetApproximateBacklogCount())
		rate += float64(st.GetTasksDispatchRate())
		served = served || pollers > 0
	}
	g.set(served, waiting, rate)
	return nil
}

func (g *Gauge) describe(ctx context.Context, typ enumspb.TaskQueueType) (*taskqueuepb.TaskQueueStats, int, error) {
	ctx, cancel := context.WithTimeout(ctx, interval)
	defer cancel()
	resp, err := g.d.DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{Namespace: g.o.Namespace,
		TaskQueue: &taskqueuepb.TaskQueue{Name: g.o.Queue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL}, TaskQueueType: typ, ReportStats: true})
	if err != nil {
		return nil, 0, fmt.Errorf("describe task queue %s (%s): %w", g.o.Queue, typ, err)
	}
	return resp.GetStats(), len(resp.GetPollers()), nil
}

// set records a read; known is false when it failed or no worker polls.
func (g *Gauge) set(known bool, waiting int, rate float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.known, g.waiting, g.rate, g.admitted = known, waiting, rate, 0
}

// Admit takes one more piece of new work if the backlog is under its bound;
// otherwise it says in how many seconds the fleet will have taken the excess.
func (g *Gauge) Admit() (retryAfter int, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// No worker polls, or none takes tasks: work admitted waits in Temporal
	// until one does; a refusal would only become an order lost at a client
	// that stops retrying.
	if !g.known || g.o.Accept <= 0 || g.rate <= 0 {
		return 0, true
	}
	over := float64(g.waiting+g.admitted+1) - max(float64(g.o.Floor), g.rate*g.o.Accept.Seconds())
	if over <= 0 {
		g.admitted++
		return 0, true
	}
	return min(max(int(math.Ceil(over/g.rate)), minRetry), maxRetry), false
}

// Wait blocks until Admit takes the work or ctx ends.
func (g *Gauge) Wait(ctx context.Context) error {
	for {
		if _, ok := g.Admit(); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the fleet's backlog: %w", ctx.Err())
		case <-time.After(interval / 4):
		}
	}
}
