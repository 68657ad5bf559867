//go:build stack

package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/orderflow/orderflow/platform/temporalclient"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker"
)

// polls counts the workflow-task polls open at once on one queue's normal
// (not sticky) side, and the most it saw.
type polls struct {
	queue     string
	mu        sync.Mutex
	open, max int
}

func (p *polls) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	poll, ok := req.(*workflowservice.PollWorkflowTaskQueueRequest)
	if !ok || poll.GetTaskQueue().GetName() != p.queue || poll.GetTaskQueue().GetKind() == enumspb.TASK_QUEUE_KIND_STICKY {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	p.mu.Lock()
	p.open++
	p.max = max(p.max, p.open)
	p.mu.Unlock()
	defer func() { p.mu.Lock(); p.open--; p.mu.Unlock() }()
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (p *polls) most() int { p.mu.Lock(); defer p.mu.Unlock(); return p.max }

// A worker keeps a poll open on each of the four partitions Temporal splits a
// task queue into, from its start: with one (the SDK's two pollers, split
// between its sticky queue and the normal one), a new workflow's first task
// waited seconds in a partition no poll reached, while the worker had slots
// free (scenario 13: a median of 6 s at twice the capacity).
func TestAWorkerPollsEveryPartitionOfItsQueue(t *testing.T) {
	env := stacktest.Env(t)
	conn, err := temporalclient.LoadConnection(func(k string) (string, bool) { v := env[k]; return v, v != "" })
	if err != nil {
		t.Fatal(err)
	}
	p := &polls{queue: stacktest.Name("pollers")}
	conn.ConnectionOptions.DialOptions = append(conn.ConnectionOptions.DialOptions, grpc.WithChainUnaryInterceptor(p.intercept))
	c, err := client.Dial(conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, worker.Options{TaskQueue: p.queue, MaxConcurrentActivities: 10, MaxConcurrentWorkflowTasks: 10, StopTimeout: time.Second}, worker.Activities{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if !stacktest.Within(15*time.Second, func() bool { return p.most() >= 4 }) {
		t.Fatalf("at most %d workflow-task polls open at once on the normal queue; want one on each of its 4 partitions", p.most())
	}
}
