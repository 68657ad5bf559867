//go:build stack

package backlog_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/platform/backlog"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// Against Temporal's own visibility store: workflows started on a queue no
// worker serves are the fleet's backlog, and new work over the floor is
// refused; once they close the rate they closed at opens the bound again.
func TestTheFleetsBacklogIsReadFromTemporal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc := stacktest.Temporal(t)
	queue := stacktest.Name("backlog")
	g, err := backlog.New(tc, backlog.Options{Queue: queue, Accept: 5 * time.Second, Floor: 3}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 4 {
		id := stacktest.Name("backlog-wf")
		if _, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, "NoWorkerServesThis"); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Visibility is written after the start: read until all four show.
	stacktest.Eventually(t, 30*time.Second, "4 open workflows refused over a floor of 3", func() bool {
		if err := g.Refresh(ctx); err != nil {
			t.Logf("refresh: %v", err)
			return false
		}
		after, ok := g.Admit()
		return !ok && after == 30
	})
	for _, id := range ids {
		if err := tc.TerminateWorkflow(ctx, id, "", "the backlog test is done with it"); err != nil {
			t.Fatal(err)
		}
	}
	stacktest.Eventually(t, 30*time.Second, "work admitted once the four closed", func() bool {
		if err := g.Refresh(ctx); err != nil {
			return false
		}
		_, ok := g.Admit()
		return ok
	})
}
