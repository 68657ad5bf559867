//go:build chaos

package chaos

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/workflows"
)

// An operator finds a tenant's orders by status with Temporal's own CLI, as the
// runbooks say (docs/operations.md): two paid and one declined, each under its
// status, and none of another tenant's. It runs on both profiles (the dev
// server's SQLite visibility and the cluster server's PostgreSQL visibility).
func TestChaosOrdersAreFoundByTenantAndStatus(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	r.order(t, "search-paid-1")
	r.order(t, "search-paid-2")
	status, declined := r.postBody(t, "search-declined", strings.Replace(orderJSON, "pm_card_visa", "pm_card_chargeDeclined", 1))
	if status != 202 {
		t.Fatalf("POST: %d", status)
	}
	r.statusAt(t, declined, order.StatusPaymentDeclined, time.Minute)
	r.paid(t, 2)

	find := func(query string) []string {
		out := stacktest.TemporalCLI(t, "workflow", "list", "--query", query, "--output", "json")
		var runs []struct {
			Execution struct {
				WorkflowID string `json:"workflowId"`
			} `json:"execution"`
		}
		if err := json.Unmarshal([]byte(out), &runs); err != nil {
			t.Fatalf("temporal workflow list --query %q: %v\n%s", query, err, out)
		}
		var ids []string
		for _, run := range runs {
			ids = append(ids, run.Execution.WorkflowID)
		}
		return ids
	}
	of := func(status order.Status) string {
		return fmt.Sprintf("%s = '%s' AND %s = '%s' AND %s = 'order'", workflows.SearchTenant, r.tenant, workflows.SearchStatus, status, workflows.SearchKind)
	}
	var paid, declinedRuns, other []string
	// Visibility follows the history a moment behind.
	stacktest.Eventually(t, 30*time.Second, "the tenant's orders under their statuses", func() bool {
		paid, declinedRuns = find(of(order.StatusPaid)), find(of(order.StatusPaymentDeclined))
		return len(paid) == 2 && len(declinedRuns) == 1
	})
	other = find(fmt.Sprintf("%s = '%s'", workflows.SearchTenant, stacktest.Name("nobody")))
	want := order.WorkflowID(r.tenant, order.FromHTTP, "search-declined")
	if declinedRuns[0] != want || len(other) != 0 {
		t.Fatalf("declined %v (want %s), another tenant's %v (want none)", declinedRuns, want, other)
	}
	summary(t, fmt.Sprintf("%-44s paid=%d declined=%d other-tenant=%d", "search: a tenant's orders by status", len(paid), len(declinedRuns), len(other)))
}
