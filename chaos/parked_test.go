//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// A worker killed with SIGKILL while a tenant's events are parked (over its
// budget, past a quarter of their partition's window) loses none of them: the
// partition never committed past a parked event, so the next worker reads them
// again from the topic. Every event, the flood's and the other tenant's behind
// it in the same partition, is exactly one order with one charge.
func TestChaosAWorkerKilledWithEventsParkedLosesNone(t *testing.T) {
	t.Parallel()
	const flood, behind = 120, 30
	r := newRig(t)
	other := stacktest.Name("other")
	if _, err := apikeys.New(r.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	w := r.writer()
	for i := range flood { // one key: one partition, the flood first
		r.produce(t, w, fmt.Sprintf("flood-%d", i), []byte("one"))
	}
	for i := range behind {
		r.produceAs(t, w, other, fmt.Sprintf("behind-%d", i), []byte("one"))
	}
	_ = w.Close()

	// Every tenant's budget is 10 events a second: the flood waits, a window
	// of 16 lets 4 of its events wait in it, and the rest are parked.
	env := map[string]string{"TENANT_RATE": "10", "TENANT_BURST": "10", "CONSUMER_MAX_UNCOMMITTED": "16"}
	first := r.startWorker(t, env)
	metrics := "http://" + r.opsAddr + "/metrics"
	stacktest.Eventually(t, 2*time.Minute, "events parked and a part of the flood paid", func() bool {
		parked := stacktest.Metric(t, string(httpGet(t, metrics)), "orderflow_consumer_parked_total")
		paid := r.paidOf(t, r.tenant)
		return parked > 0 && paid >= 10
	})
	paid := r.paidOf(t, r.tenant)
	if paid == flood {
		t.Fatal("the whole flood was paid before the kill: nothing was parked when the worker died")
	}
	first.Kill(t)
	t.Logf("killed with %d of the flood's %d orders paid", paid, flood)

	r.startWorker(t, env)
	r.ledger(t, "SIGKILL with events parked")
	stacktest.Eventually(t, time.Minute, "the other tenant's events to be paid", func() bool { return r.paidOf(t, other) == behind })
	for i := range behind {
		id := order.WorkflowID(other, order.FromEvent, fmt.Sprintf("behind-%d", i))
		if c := len(r.Sim.ChargesForOrder(order.IDFor(id))); c != 1 {
			t.Errorf("%s: %d charges", id, c)
		}
	}
}
