package backlog

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
)

// queue answers DescribeTaskQueue with what the test set, for each type.
type queue struct {
	mu      sync.Mutex
	waiting map[enumspb.TaskQueueType]int64
	rate    map[enumspb.TaskQueueType]float32
	pollers int
	err     error
	asked   []*workflowservice.DescribeTaskQueueRequest
}

func (q *queue) DescribeTaskQueue(_ context.Context, req *workflowservice.DescribeTaskQueueRequest, _ ...grpc.CallOption) (*workflowservice.DescribeTaskQueueResponse, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.asked = append(q.asked, req)
	if q.err != nil {
		return nil, q.err
	}
	t := req.GetTaskQueueType()
	return &workflowservice.DescribeTaskQueueResponse{
		Stats:   &taskqueuepb.TaskQueueStats{ApproximateBacklogCount: q.waiting[t], TasksDispatchRate: q.rate[t]},
		Pollers: make([]*taskqueuepb.PollerInfo, q.pollers),
	}, nil
}

// set splits waiting and rate over the two types: the gauge adds them up.
func (q *queue) set(waiting int64, rate float32, pollers int, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	wf, act := enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY
	q.waiting = map[enumspb.TaskQueueType]int64{wf: waiting / 2, act: waiting - waiting/2}
	q.rate = map[enumspb.TaskQueueType]float32{wf: rate / 2, act: rate / 2}
	q.pollers, q.err = pollers, err
}

func read(t *testing.T, g *Gauge, q *queue, waiting int64, rate float32, pollers int) {
	t.Helper()
	q.set(waiting, rate, pollers, nil)
	if err := g.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestBothTypesOfTheQueueAreAskedWithTheirStats(t *testing.T) {
	q := &queue{}
	g := New(q, Options{Namespace: "ns", Queue: "orders", Accept: 5 * time.Second, Floor: 10})
	read(t, g, q, 0, 0, 1)
	var types []enumspb.TaskQueueType
	for _, r := range q.asked {
		if r.GetNamespace() != "ns" || r.GetTaskQueue().GetName() != "orders" || !r.GetReportStats() ||
			r.GetTaskQueue().GetKind() != enumspb.TASK_QUEUE_KIND_NORMAL {
			t.Fatalf("asked %v", r)
		}
		types = append(types, r.GetTaskQueueType())
	}
	if len(types) != 2 || types[0] != enumspb.TASK_QUEUE_TYPE_WORKFLOW || types[1] != enumspb.TASK_QUEUE_TYPE_ACTIVITY {
		t.Fatalf("types asked: %v", types)
	}
}

func TestWorkOverWhatTheFleetTakesInTheAcceptedTimeIsRefused(t *testing.T) {
	q := &queue{}
	g := New(q, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10})
	// 2 tasks a second taken: 5 s of it is 10; 8 waiting leave room for 2.
	read(t, g, q, 8, 2, 1)
	for i := range 2 {
		if _, ok := g.Admit(); !ok {
			t.Fatalf("admission %d of 2 under the bound refused", i+1)
		}
	}
	after, ok := g.Admit()
	if ok {
		t.Fatal("an 11th task admitted over a bound of 10")
	}
	if after != 1 {
		t.Fatalf("Retry-After %d, want 1 (one over at 2 a second)", after)
	}
	// Far behind: 100 over at 2 a second is 50 s, told 30 at most.
	read(t, g, q, 110, 2, 1)
	if after, ok := g.Admit(); ok || after != maxRetry {
		t.Fatalf("100 over: (%d, %v), want (%d, false)", after, ok, maxRetry)
	}
	// A faster fleet has a higher bound: 100 a second for 5 s is 500.
	read(t, g, q, 110, 100, 1)
	if _, ok := g.Admit(); !ok {
		t.Fatal("110 waiting refused against a bound of 500")
	}
}

func TestTheFloorHoldsAndNothingIsRefusedWithoutAWorkerAtWork(t *testing.T) {
	q := &queue{}
	g := New(q, Options{Queue: "q", Accept: 5 * time.Second, Floor: 10})
	read(t, g, q, 9, 0.1, 1) // a bound of 0.5, under the floor
	if _, ok := g.Admit(); !ok {
		t.Fatal("the 10th task refused under a floor of 10")
	}
	if after, ok := g.Admit(); ok || after != 10 {
		t.Fatalf("one over the floor at 0.1 a second: (%d, %v), want (10, false)", after, ok)
	}
	// A worker polls but takes nothing, or none polls: what is admitted waits
	// in Temporal for one.
	for _, c := range []struct {
		rate    float32
		pollers int
	}{{0, 1}, {5, 0}} {
		read(t, g, q, 1000, c.rate, c.pollers)
		if _, ok := g.Admit(); !ok {
			t.Fatalf("refused at %v a second with %d pollers", c.rate, c.pollers)
		}
	}
}

func TestABacklogNotReadAdmitsAndNoBoundAdmits(t *testing.T) {
	q := &queue{}
	g := New(q, Options{Queue: "q", Accept: 5 * time.Second, Floor: 1})
	read(t, g, q, 1000, 1, 1)
	if _, ok := g.Admit(); ok {
		t.Fatal("1000 waiting admitted over a bound of 5")
	}
	q.set(1000, 1, 1, errors.New("frontend unavailable"))
	if err := g.Refresh(context.Background()); err == nil {
		t.Fatal("a failed read was not reported")
	}
	if _, ok := g.Admit(); !ok {
		t.Fatal("refused on a backlog that could not be read")
	}
	off := New(q, Options{Queue: "q", Floor: 1})
	read(t, off, q, 1000, 1, 1)
	if _, ok := off.Admit(); !ok {
		t.Fatal("refused with BACKLOG_ACCEPT 0")
	}
}

func TestWaitGoesOnOnceTheBacklogFallsAndEndsWithItsContext(t *testing.T) {
	q := &queue{}
	g := New(q, Options{Queue: "q", Accept: 5 * time.Second, Floor: 1})
	read(t, g, q, 5, 0.1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait over the bound: %v, want its context's end", err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait(context.Background()) }()
	read(t, g, q, 0, 0.1, 1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not go on once the backlog fell under the bound")
	}
}
