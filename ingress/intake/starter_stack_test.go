//go:build stack

package intake_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// A tenant's backlog of workflows started from a topic waits in a task queue no
// worker polls yet; then the API's starter starts one more of the tenant's, one
// a caller waits for. When a worker comes, matching hands out that workflow's
// first task before the backlog's, though it came last. Before, the API's starts
// had the events' priority, and it ran behind most of the backlog (64th and 74th
// of 101 in two runs: the queue's four partitions drain side by side).
func TestAWorkflowACallerWaitsForGoesBeforeATopicsBacklog(t *testing.T) {
	t.Parallel()
	const backlog = 100
	c := stacktest.Temporal(t)
	queue, tenant := stacktest.Name("waited"), stacktest.Name("tenant")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var ran []string // workflow IDs, in the order their first tasks ran
	first := func(ctx workflow.Context, _ string) error {
		if !workflow.IsReplaying(ctx) {
			mu.Lock()
			ran = append(ran, workflow.GetInfo(ctx).WorkflowExecution.ID)
			mu.Unlock()
		}
		return nil
	}
	events := intake.Setup{Temporal: c, TaskQueue: queue}.Starter()
	api := intake.Setup{Temporal: c, TaskQueue: queue, Waited: true}.Starter()
	for i := range backlog {
		if _, err := events.StartNew(ctx, tenant, fmt.Sprintf("probe:%s-event-%d", queue, i), "probe", "event"); err != nil {
			t.Fatal(err)
		}
	}
	waited := "probe:" + queue + "-waited"
	if _, err := api.StartNew(ctx, tenant, waited, "probe", "waited"); err != nil {
		t.Fatal(err)
	}

	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(first, workflow.RegisterOptions{Name: "probe"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	stacktest.Eventually(t, time.Minute, "every workflow's first task run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == backlog+1
	})
	mu.Lock()
	defer mu.Unlock()
	at := slices.Index(ran, waited)
	t.Logf("the waited-for workflow ran %d of %d", at+1, len(ran))
	// A poll reaches one of the queue's partitions at a time: the waited task
	// goes first in its own, after at most a few polls of the others.
	if at < 0 || at >= backlog/5 {
		t.Fatalf("the workflow a caller waits for ran %d of %d, behind the topic's backlog", at+1, len(ran))
	}
}
