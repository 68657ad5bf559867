package shadow

import (
	"fmt"
	"strings"
	"time"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/orderflow/orderflow/workflows"
)

// Query is the visibility query of a check at now: every running run, whatever
// its type (a run this build cannot take would be stuck after the rollout), and
// the runs closed within since, which a query or a reset would replay; the
// operator's query on top.
func Query(extra string, since time.Duration, now time.Time) string {
	q := "ExecutionStatus = 'Running'"
	if since > 0 {
		q = fmt.Sprintf("(%s OR CloseTime >= '%s')", q, now.Add(-since).UTC().Format(time.RFC3339))
	}
	if strings.TrimSpace(extra) != "" {
		q += " AND (" + extra + ")"
	}
	return q
}

// selection caps what a check reads: in all, and per tenant.
type selection struct {
	limit, perTenant int
	tenants          map[string]int // histories taken per tenant
}

func newSelection(o Options) *selection {
	return &selection{limit: o.Limit, perTenant: o.PerTenant, tenants: map[string]int{}}
}

// full is whether checked histories are all the limit allows.
func (s *selection) full(checked int) bool { return s.limit > 0 && checked >= s.limit }

// admit takes a run unless its tenant has had its share.
func (s *selection) admit(ex *workflowpb.WorkflowExecutionInfo) bool {
	if s.perTenant == 0 {
		return true
	}
	t := tenant(ex)
	if s.tenants[t] >= s.perTenant {
		return false
	}
	s.tenants[t]++
	return true
}

// tenant is a run's OrderflowTenant search attribute; "" without one.
func tenant(ex *workflowpb.WorkflowExecutionInfo) string {
	p, ok := ex.GetSearchAttributes().GetIndexedFields()[workflows.SearchTenant]
	if !ok {
		return ""
	}
	var t string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &t); err != nil {
		return ""
	}
	return t
}
