//go:build stack

package backlog_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/platform/backlog"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

func slowly(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	return workflow.ExecuteActivity(ctx, "Slow").Get(ctx, nil)
}

// Against Temporal itself: a queue no worker polls is no fleet behind, and its
// work is admitted to wait; a worker that takes one activity at a time behind
// twelve is behind, and new work over the bound is refused with a Retry-After;
// once it has taken them all, work is admitted again.
func TestTheFleetsBacklogIsReadFromTemporal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tc := stacktest.Temporal(t)
	queue := stacktest.Name("backlog")
	g := backlog.New(tc.WorkflowService(), backlog.Options{Namespace: stacktest.Env(t)["TEMPORAL_NAMESPACE"], Queue: queue, Accept: time.Second, Floor: 3})
	var runs []client.WorkflowRun
	for range 12 {
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, slowly)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Admit(); !ok {
		t.Fatal("refused on a queue no worker polls")
	}
	w := sdkworker.New(tc, queue, sdkworker.Options{MaxConcurrentActivityExecutionSize: 1})
	w.RegisterWorkflow(slowly)
	w.RegisterActivityWithOptions(func(ctx context.Context) error {
		select {
		case <-ctx.Done():
		case <-time.After(700 * time.Millisecond):
		}
		return nil
	}, activityNamed("Slow"))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	stacktest.Eventually(t, 30*time.Second, "work refused behind the worker's backlog", func() bool {
		if err := g.Refresh(ctx); err != nil {
			t.Logf("refresh: %v", err)
			return false
		}
		after, ok := g.Admit()
		return !ok && after >= 1
	})
	for _, run := range runs {
		if err := run.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	stacktest.Eventually(t, 30*time.Second, "work admitted once the worker took the backlog", func() bool {
		if err := g.Refresh(ctx); err != nil {
			return false
		}
		_, ok := g.Admit()
		return ok
	})
}

func activityNamed(name string) activity.RegisterOptions { return activity.RegisterOptions{Name: name} }
