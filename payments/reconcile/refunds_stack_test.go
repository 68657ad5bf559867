//go:build stack

package reconcile_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// A refund at the provider that names a refund request is explained by the
// request's row (succeeded with it, or on its way) and left alone; one whose
// request does not show it is a finding, as a dashboard's refund is.
func TestRefundRequestsExplainTheirRefunds(t *testing.T) {
	ctx := context.Background()
	pool := stacktest.Pool(t)
	tenant := stacktest.Name("recon")
	orderID, intent := tenant+"-o", "pi_"+tenant
	if _, err := pool.Exec(ctx, `
		INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status, payment_ref, paid_at)
		VALUES ($1, $2, 'wf-' || $1, 'cus', '[]', 1000, 'USD', 'PAID', $3, now())`, orderID, tenant, intent); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status, provider_id, intent_id)
		VALUES ('k-' || $1, $1, 'intent', 1000, 'USD', 'created', $2, $2)`, orderID, intent); err != nil {
		t.Fatal(err)
	}
	sim := sandbox.New(slog.New(slog.NewTextHandler(io.Discard, nil)), sandbox.Options{})
	sim.Preload(1, 1000, "USD", func(int) string { return orderID }, func(int) string { return intent })
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	pay := provider.New(provider.Config{URL: srv.URL, Timeout: 10 * time.Second}, nil)
	charge := sim.ChargesForOrder(orderID)[0].ID

	refunds := refundstore.New(pool)
	request := func(key string) refund.Refund {
		wf := refund.WorkflowID(tenant, identity.FromHTTP, key)
		r := refund.Refund{ID: refund.IDFor(wf), Tenant: tenant, WorkflowID: wf, OrderID: orderID, Amount: 100}
		if _, err := refunds.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	refundAt := func(key, requestID string) string {
		md := map[string]string{"order_id": orderID}
		if requestID != "" {
			md["orderflow_refund_request"] = requestID
		}
		re, err := pay.RefundCharge(ctx, key, charge, 100, md)
		if err != nil {
			t.Fatal(err)
		}
		return re.ID
	}
	done, onItsWay := request("done"), request("on-its-way")
	if _, err := refunds.Settle(ctx, done.ID, refundAt("k-done", done.ID), 100); err != nil {
		t.Fatal(err)
	}
	refundAt("k-on-its-way", onItsWay.ID)
	lost := refundAt("k-lost", refund.IDFor(refund.WorkflowID(tenant, identity.FromHTTP, "no-row")))
	dashboard := refundAt("k-dashboard", "")

	eng := &engine{}
	rec := reconcile.New(eng, pay, stacktest.TenantOrders{Store: orderstore.New(pool), Tenant: tenant}, ledger.New(pool), stacktest.TenantRequests{Store: reconcile.NewStore(pool), Tenant: tenant},
		reconcile.NewMetrics(prometheus.NewRegistry()), reconcile.Options{Grace: time.Minute, FirstLookback: time.Hour})
	began := time.Now().Add(-time.Second)
	if _, err := rec.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	findings, err := reconcile.NewStore(pool).Since(ctx, began, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range findings {
		if f.OrderID == orderID {
			found = append(found, f.ProviderID)
		}
	}
	slices.Sort(found)
	want := []string{lost, dashboard}
	slices.Sort(want)
	if !slices.Equal(found, want) || eng.followed.Load() != 2 {
		t.Fatalf("findings %v and %d follows; want %v, each followed", found, eng.followed.Load(), want)
	}
}
