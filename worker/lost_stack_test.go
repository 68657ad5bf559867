//go:build stack

package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/tenants/fairness"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/workflows"
)

// behind is the provider as a reconciler sees it with its clock behind the
// engine's by lag; the charges of the orders in unnamed come without the
// workflow their intents name, as intents made before intents named it.
type behind struct {
	*provider.Client
	lag     time.Duration
	unnamed map[string]bool
}

func (p behind) ListCharges(ctx context.Context, since time.Time, page func([]provider.Charge) error) error {
	return p.Client.ListCharges(ctx, since.Add(-p.lag), func(cs []provider.Charge) error {
		for i := range cs {
			cs[i].Created = cs[i].Created.Add(-p.lag)
			if p.unnamed[cs[i].Metadata["order_id"]] {
				for k := range cs[i].Metadata {
					if strings.HasPrefix(k, reconcile.WorkflowMetadata) {
						delete(cs[i].Metadata, k)
					}
				}
			}
		}
		return page(cs)
	})
}

// PostgreSQL lost two paid orders (their rows deleted), and the provider's
// clock is 3 minutes behind Temporal's, so each charge seems made before its
// workflow started: one whose intent names its workflow (an ID longer than a
// metadata value), and one whose intent does not. One pass writes each back PAID
// from its workflow; nothing is refunded.
func TestLostOrdersAreRebuiltWhateverTheProvidersClock(t *testing.T) {
	h := newHarness(t)
	h.StartWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	named, in := h.placeOrder(strings.Repeat(":", 200), "pm_card_visa")
	unnamed, in2 := h.placeOrder("unnamed", "pm_card_visa")
	for _, run := range []client.WorkflowRun{h.execute(t, ctx, named, in), h.execute(t, ctx, unnamed, in2)} {
		var res workflows.OrderResult
		if err := run.Get(ctx, &res); err != nil || res.Status != order.StatusPaid {
			t.Fatalf("order %s: %s, %v", run.GetID(), res.Status, err)
		}
	}
	ids := []string{in.Order.ID, in2.Order.ID}
	for _, q := range []string{`DELETE FROM payments WHERE order_id = ANY($1)`, `DELETE FROM orders WHERE id = ANY($1)`} {
		if _, err := h.Pool.Exec(ctx, q, ids); err != nil {
			t.Fatal(err)
		}
	}

	dc, _ := payloadcodec.Converters(h.Codec)
	pay := behind{Client: provider.New(provider.Config{URL: h.SimURL, Timeout: 10 * time.Second}, nil), lag: 3 * time.Minute,
		unnamed: map[string]bool{in2.Order.ID: true}}
	rec := reconcile.New(worker.NewEngine(h.Temporal, dc, h.Env["TEMPORAL_NAMESPACE"], h.Queue, fairness.Weights{}, workflows.Policy{}),
		pay, stacktest.TenantOrders{Store: orderstore.New(h.Pool), Tenant: h.tenant}, ledger.New(h.Pool),
		stacktest.TenantRequests{Store: reconcile.NewStore(h.Pool), Tenant: h.tenant}, reconcile.NewMetrics(prometheus.NewRegistry()),
		reconcile.Options{Grace: time.Minute, Overlap: time.Hour, FirstLookback: time.Hour, RefundOrphans: true})
	rep, err := rec.Pass(ctx)
	if err != nil {
		t.Fatalf("pass: %v (%+v)", err, rep)
	}
	paid := h.count(t, `SELECT count(*) FROM orders WHERE id = ANY($1) AND status = 'PAID'`, ids)
	rebuilt := h.count(t, `SELECT count(*) FROM reconcile_findings WHERE order_id = ANY($1) AND kind = 'row_rebuilt' AND action = 'rebuilt'`, ids)
	if refunds := len(h.Sim.Refunds()); paid != 2 || rebuilt != 2 || refunds != 0 {
		t.Fatalf("%d orders PAID, %d rebuilt, %d refunds: want 2, 2 and none (%+v)", paid, rebuilt, refunds, rep)
	}
}
