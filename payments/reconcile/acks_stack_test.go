//go:build stack

package reconcile_test

import (
	"context"
	"testing"

	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// An acknowledged finding reopens when its repair fails again, whatever was done
// when it was acknowledged; seen again as it was, it stays acknowledged.
func TestAcknowledgedFindingReopensWhenItsRepairFailsAgain(t *testing.T) {
	ctx := context.Background()
	pool := stacktest.Pool(t)
	store := reconcile.NewStore(pool)
	findings := reconcile.Reopening{Store: store}
	tenant := stacktest.Name("reopen")
	failed := reconcile.Finding{Kind: reconcile.KindChargeWithoutOrder, Action: reconcile.ActionFailed, Tenant: tenant,
		ProviderID: "ch_" + tenant, Amount: 500, Currency: "USD", Detail: "provider answered 500"}
	refunded := reconcile.Finding{Kind: reconcile.KindRefundElsewhere, Action: reconcile.ActionRefunded, Tenant: tenant,
		ProviderID: "re_" + tenant, OrderID: "ord_" + tenant, Amount: 500, Currency: "USD"}

	record := func(f reconcile.Finding, wantNew bool) {
		t.Helper()
		if isNew, err := findings.Record(ctx, f); err != nil || isNew != wantNew {
			t.Fatalf("record %s %s: new %v (%v), want %v", f.Kind, f.Action, isNew, err, wantNew)
		}
	}
	open := func() map[string]reconcile.Finding {
		t.Helper()
		all, err := store.List(ctx, reconcile.Filter{Open: true, Limit: 100000})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]reconcile.Finding{}
		for _, f := range all {
			if f.Tenant == tenant {
				out[f.ProviderID] = f
			}
		}
		return out
	}
	ack := func() {
		t.Helper()
		var ids []int64
		for _, f := range open() {
			ids = append(ids, f.ID)
		}
		if _, err := store.Acknowledge(ctx, ids, "ana", "seen"); err != nil {
			t.Fatal(err)
		}
		if n := len(open()); n != 0 {
			t.Fatalf("%d findings open after their acknowledgement", n)
		}
	}

	record(failed, true)
	record(refunded, true)
	ack()
	record(refunded, false) // seen again as it was: nothing new
	if n := len(open()); n != 0 {
		t.Fatalf("%d findings reopened by being seen again", n)
	}

	failed.Detail = "provider answered 500 again"
	record(failed, true)
	refunded.Action, refunded.Detail = reconcile.ActionFailed, "charge_disputed"
	record(refunded, true)
	got := open()
	if len(got) != 2 || got[failed.ProviderID].Detail != failed.Detail || got[refunded.ProviderID].Action != reconcile.ActionFailed ||
		got[refunded.ProviderID].AckedAt != nil || got[refunded.ProviderID].AckedBy != "" {
		t.Fatalf("open after the repairs failed again: %+v", got)
	}
	record(failed, false) // open already: the same failure is not news
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_findings WHERE tenant = $1`, tenant).Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("%d rows (%v), want one per discrepancy", rows, err)
	}
}
