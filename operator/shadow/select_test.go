package shadow

import (
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/orderflow/orderflow/workflows"
)

// The default selection: every running run, and those closed lately; the
// operator's query on top.
func TestQuery(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	got := Query("OrderflowTenant = 'acme'", 24*time.Hour, now)
	want := "(ExecutionStatus = 'Running' OR CloseTime >= '2026-12-05T10:00:00Z') AND (OrderflowTenant = 'acme')"
	if got != want {
		t.Fatalf("query\n %s\nwant\n %s", got, want)
	}
	if got := Query(" ", 0, now); got != "ExecutionStatus = 'Running'" {
		t.Fatalf("running only: %s", got)
	}
}

// A tenant gets at most its share; runs without a tenant share one.
func TestPerTenant(t *testing.T) {
	run := func(tenant string) *workflowpb.WorkflowExecutionInfo {
		ex := &workflowpb.WorkflowExecutionInfo{}
		if tenant != "" {
			p, _ := converter.GetDefaultDataConverter().ToPayload(tenant)
			ex.SearchAttributes = &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{workflows.SearchTenant: p}}
		}
		return ex
	}
	s := newSelection(Options{PerTenant: 2})
	var taken []string
	for _, tn := range []string{"a", "a", "b", "a", "", "", "", "b", "b"} {
		if s.admit(run(tn)) {
			taken = append(taken, tn)
		}
	}
	if got := strings.Join(taken, ","); got != "a,a,b,,,b" {
		t.Fatalf("taken %q, want a,a,b,,,b", got)
	}
	if !newSelection(Options{Limit: 3}).full(3) || newSelection(Options{}).full(1<<20) {
		t.Fatal("limit")
	}
}

// Money fields are found at any depth, by name in any case; a field the history
// lacks is new and not compared; a card token is shown only as a digest.
func TestCompare(t *testing.T) {
	was := `[{"Key":"k1","Amount":2598,"Nested":{"paymentMethod":"pm_secret_1","Note":"a"},"Lines":[{"amount":1}]}]`
	now := `[{"Key":"k1","Amount":2598,"Nested":{"paymentMethod":"pm_secret_2","Note":"b"},"Lines":[{"amount":2}],"Tenant":"new"}]`
	diffs, err := compare([]byte(was), []byte(now))
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 2 || diffs[0].path != "$[0].Lines[0].amount" || diffs[0].recorded != "1" || diffs[0].produced != "2" ||
		diffs[1].path != "$[0].Nested.paymentMethod" || !strings.HasPrefix(diffs[1].recorded, "sha256:") ||
		strings.Contains(diffs[1].recorded+diffs[1].produced, "pm_secret") || diffs[1].recorded == diffs[1].produced {
		t.Fatalf("diffs %+v", diffs)
	}
	if diffs, _ := compare([]byte(`[{"Key":"k1"}]`), []byte(`[{"Other":"k1"}]`)); len(diffs) != 1 || diffs[0].produced != absent {
		t.Fatalf("a key no longer sent: %+v", diffs)
	}
}
