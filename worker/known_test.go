package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/workflows"
)

// lists is a Temporal client that records the queries of its workflow lists and
// lists nothing.
type lists struct {
	client.Client
	queries []string
}

func (c *lists) ListWorkflow(_ context.Context, r *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	c.queries = append(c.queries, r.GetQuery())
	return &workflowservice.ListWorkflowExecutionsResponse{}, nil
}

// The search for a lost order's workflow reads both order types (the frozen
// one's runs too), from as long before the window as the engine's orders wait
// on their customers (3-D Secure).
func TestLostSearchesBothOrderTypesAndTheCustomersWait(t *testing.T) {
	to := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	from := to.Add(-time.Hour)
	for wait, want := range map[time.Duration]time.Duration{0: workflows.DefaultActionTimeout, 48 * time.Hour: 48 * time.Hour} {
		c := &lists{}
		e := &Engine{c: c, policy: workflows.Policy{ActionTimeout: wait}}
		if _, ok, err := e.Lost(context.Background(), "acme", "ord_1", from, to); ok || err != nil {
			t.Fatalf("an empty list found %t, %v", ok, err)
		}
		if len(c.queries) != 1 {
			t.Fatalf("%d lists, want 1", len(c.queries))
		}
		q := c.queries[0]
		start := from.Add(-want).Format(time.RFC3339Nano)
		if !strings.Contains(q, "WorkflowType IN ('Order', 'OrderWorkflow')") || !strings.Contains(q, "BETWEEN '"+start+"' AND '"+to.Format(time.RFC3339Nano)+"'") {
			t.Fatalf("action timeout %v: query %q, want both order types started from %s", wait, q, start)
		}
	}
}
