//go:build chaos

package chaos

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// An operator resets to their first workflow task an order refunded in part in
// the provider's dashboard (300 of 1299) and a disputed one, once each follows
// its payment: the reset runs find their payments, send nothing to the provider,
// and leave PARTIALLY_REFUNDED and DISPUTED as they were.
func TestChaosResetOfAnOrderOthersMovedSince(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	r.reconciler(t)
	partial, disputed := r.paidOrder(t, "reset-partial"), r.paidOrder(t, "reset-disputed")
	var intent string
	if err := r.Pool.QueryRow(context.Background(), `SELECT payment_ref FROM orders WHERE id = $1`, partial).Scan(&intent); err != nil {
		t.Fatal(err)
	}
	dashboard := provider.New(provider.Config{URL: r.SimURL, Timeout: 5 * time.Second}, nil)
	if _, err := dashboard.RefundIntent(context.Background(), "dashboard-300", intent, 300, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := http.PostForm(r.SimURL+"/sandbox/disputes", url.Values{"charge": {r.Sim.ChargesForOrder(disputed)[0].ID}})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("dispute: %v %v", resp, err)
	}
	resp.Body.Close()
	within := reconcileWithin
	r.waitStatus(t, partial, order.StatusPartiallyRefunded, within)
	r.waitStatus(t, disputed, order.StatusDisputed, within)
	refunds := len(r.Sim.Refunds())
	for _, key := range []string{"reset-partial", "reset-disputed"} {
		wf := r.workflowOf(key)
		r.operator(t, "workflow", "reset", "--workflow-id", wf, "--type", "FirstWorkflowTask", "--reason", "operator")
		stacktest.Eventually(t, time.Minute, "the reset run of "+key, func() bool { return stacktest.Runs(t, r.Temporal, wf) == 2 })
		r.settle(t, key)
	}
	if n := len(r.Sim.Refunds()); n != refunds {
		t.Fatalf("%d refunds at the provider after the resets, %d before", n, refunds)
	}
	r.waitStatus(t, disputed, order.StatusDisputed, time.Second)
	r.refundLedger(t, "reset: of a partly refunded order", partial, order.StatusPartiallyRefunded)
}
