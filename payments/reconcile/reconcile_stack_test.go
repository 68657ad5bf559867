//go:build stack

package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// engine counts what a pass asks of Temporal; every workflow runs.
type engine struct{ described, recovered, followed atomic.Int64 }

func (e *engine) Running(context.Context, string) (bool, error) { e.described.Add(1); return true, nil }
func (e *engine) Recover(context.Context, orderstore.Unsettled, string) error {
	e.recovered.Add(1)
	return nil
}
func (e *engine) Follow(context.Context, order.Order, string, string) error {
	e.followed.Add(1)
	return nil
}

// Known and Lost: no workflow of these orders is remembered.
func (e *engine) Known(context.Context, string) (reconcile.Known, bool, error) {
	return reconcile.Known{}, false, nil
}
func (e *engine) Retention(context.Context) (time.Duration, error) { return 72 * time.Hour, nil }
func (e *engine) Lost(context.Context, string, string, time.Time, time.Time) (reconcile.Known, bool, error) {
	return reconcile.Known{}, false, nil
}

// counted counts the requests sent to the provider.
type counted struct{ n atomic.Int64 }

func (c *counted) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// A pass over 10,000 paid orders and their 10,000 charges reads the provider by
// its lists: a request per 100 objects, never one per order, and finds nothing
// to repair. Its CPU (the pass and the sandbox answering it, in this process) is
// logged.
func TestPassOverTenThousandOrdersReadsListsNotOrders(t *testing.T) {
	const n = 10000
	ctx := context.Background()
	pool := stacktest.Pool(t)
	tenant := stacktest.Name("recon")
	if _, err := pool.Exec(ctx, `
		INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status, payment_ref, paid_at)
		SELECT $1 || '-' || i, $1, 'wf-' || $1 || '-' || i, 'cus', '[]', 500, 'USD', 'PAID', 'pi_' || $1 || i, now()
		FROM generate_series(0, $2 - 1) i`, tenant, n); err != nil {
		t.Fatal(err)
	}
	sim := sandbox.New(slog.New(slog.NewTextHandler(io.Discard, nil)), sandbox.Options{})
	sim.Preload(n, 500, "USD", func(i int) string { return fmt.Sprintf("%s-%d", tenant, i) },
		func(i int) string { return fmt.Sprintf("pi_%s%d", tenant, i) })
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	requests := &counted{}
	pay := provider.New(provider.Config{URL: srv.URL, Timeout: 10 * time.Second}, requests)
	eng := &engine{}
	rec := reconcile.New(eng, pay, stacktest.TenantOrders{Store: orderstore.New(pool), Tenant: tenant}, ledger.New(pool), stacktest.TenantRequests{Store: reconcile.NewStore(pool), Tenant: tenant},
		reconcile.NewMetrics(prometheus.NewRegistry()), reconcile.Options{Grace: time.Minute, FirstLookback: time.Hour, RefundOrphans: true})

	a, err := rec.Audit(ctx, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if a.Charges != n || len(a.Findings) != 0 {
		t.Fatalf("audit read %d charges and found %v", a.Charges, a.Findings)
	}
	// The pass as the worker runs it: paced, and with refunds and disputes.
	paced := provider.New(provider.Config{URL: srv.URL, Timeout: 10 * time.Second}, provider.Paced(requests, reconcile.ProviderRate))
	rec = reconcile.New(eng, paced, stacktest.TenantOrders{Store: orderstore.New(pool), Tenant: tenant}, ledger.New(pool), stacktest.TenantRequests{Store: reconcile.NewStore(pool), Tenant: tenant},
		reconcile.NewMetrics(prometheus.NewRegistry()), reconcile.Options{Grace: time.Minute, Overlap: time.Hour, FirstLookback: time.Hour, RefundOrphans: true})
	requests.n.Store(0)
	cpu := cpuTime()
	began := time.Now()
	rep, err := rec.Pass(ctx)
	took, used := time.Since(began), cpuTime()-cpu
	if err != nil {
		t.Fatal(err)
	}
	sent := requests.n.Load()
	t.Logf("a pass over %d paid orders: %d charges read, %d provider requests in %s (%.1f a second), CPU %s (the pass and the sandbox); %d workflows described",
		n, rep.Charges, sent, took.Round(time.Millisecond), float64(sent)/took.Seconds(), used.Round(time.Millisecond), eng.described.Load())
	if sent > n/100+4 || rep.Findings != 0 || rep.Charges < n {
		t.Fatalf("%d provider requests for %d charges (want one per 100), %+v", sent, n, rep)
	}
	if rate := float64(sent) / took.Seconds(); rate > reconcile.ProviderRate*1.1 {
		t.Fatalf("%.1f provider requests a second, over the pace of %d", rate, reconcile.ProviderRate)
	}
}

// cpuTime is the CPU this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
