//go:build stack

package reconcile_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
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

// remembers is an engine whose workflows show one order paid.
type remembers struct {
	engine
	k reconcile.Known
}

func (e *remembers) Lost(_ context.Context, _, orderID string, _, _ time.Time) (reconcile.Known, bool, error) {
	return e.k, e.k.Order.ID == orderID, nil
}

// The database lost a paid order, and its finding cannot be written when the
// pass writes the order back (PostgreSQL refuses that insert): the order is not
// written back either, and the next pass writes both. A row written back
// without its finding would be a repair nobody sees: the pass after it finds
// the row in place.
func TestARebuiltOrderAndItsFindingAreWrittenTogether(t *testing.T) {
	ctx := context.Background()
	pool := stacktest.Pool(t)
	tenant := stacktest.Name("rebuilt")
	sim := sandbox.New(slog.New(slog.NewTextHandler(io.Discard, nil)), sandbox.Options{})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	pay := provider.New(provider.Config{URL: srv.URL, Timeout: 10 * time.Second}, nil)
	o := order.Order{ID: tenant + "-1", Tenant: tenant, WorkflowID: "order:" + tenant + ":http:k1", CustomerID: "cus_1",
		Amount: 500, Currency: "usd", Items: []order.Item{{SKU: "sku-1", Quantity: 1, UnitAmount: 500}}}
	in, err := pay.CreateIntent(ctx, "intent-"+o.ID, o.Amount, o.Currency, "pm_card_visa", map[string]string{"tenant": tenant, "order_id": o.ID})
	if err == nil {
		in, err = pay.ConfirmIntent(ctx, "confirm-"+o.ID, in.ID)
	}
	if err != nil || in.Status != "succeeded" {
		t.Fatalf("pay the order: %+v, %v", in, err)
	}
	refuse := strings.ReplaceAll(tenant, "-", "_") + "_refused"
	exec := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE FUNCTION ` + refuse + `() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`)
	exec(`CREATE TRIGGER ` + refuse + ` BEFORE INSERT ON reconcile_findings FOR EACH ROW
		WHEN (NEW.order_id = '` + o.ID + `') EXECUTE FUNCTION ` + refuse + `()`)
	t.Cleanup(func() {
		_, _ = pool.Exec(ctx, `DROP TRIGGER IF EXISTS `+refuse+` ON reconcile_findings`)
		_, _ = pool.Exec(ctx, `DROP FUNCTION IF EXISTS `+refuse+`()`)
	})
	eng := &remembers{k: reconcile.Known{Order: o, Status: order.StatusPaid, IntentID: in.ID}}
	rec := reconcile.New(eng, pay, stacktest.TenantOrders{Store: orderstore.New(pool), Tenant: tenant}, ledger.New(pool), stacktest.TenantRequests{Store: reconcile.NewStore(pool), Tenant: tenant},
		reconcile.NewMetrics(prometheus.NewRegistry()), reconcile.Options{Grace: time.Minute, Overlap: time.Hour, FirstLookback: time.Hour, RefundOrphans: true})
	count := func(sql string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, sql, o.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rows := `SELECT count(*) FROM orders WHERE id = $1 AND status = 'PAID'`
	findings := `SELECT count(*) FROM reconcile_findings WHERE order_id = $1 AND kind = 'row_rebuilt' AND action = 'rebuilt'`

	rep, err := rec.Pass(ctx)
	t.Logf("the pass the finding was refused in: %+v, %v", rep, err)
	if n := count(rows); n != 0 {
		t.Fatalf("the order was written back without its finding (%d rows)", n)
	}
	exec(`DROP TRIGGER ` + refuse + ` ON reconcile_findings`)
	if rep, err = rec.Pass(ctx); err != nil {
		t.Fatalf("the next pass: %v", err)
	}
	if r, f := count(rows), count(findings); r != 1 || f != 1 {
		t.Fatalf("after the next pass: %d rows, %d findings, want the order paid and its finding (%+v)", r, f, rep)
	}
	if n := len(sim.Refunds()); n != 0 {
		t.Fatalf("%d refunds of the lost order's charge", n)
	}

	// Lost again (a second restore from the same snapshot): the row is written
	// back once more, and the finding that says so is the one already there, so
	// the pass counts no new finding.
	exec(`DELETE FROM payments WHERE order_id = '` + o.ID + `'`)
	exec(`DELETE FROM orders WHERE id = '` + o.ID + `'`)
	if rep, err = rec.Pass(ctx); err != nil {
		t.Fatalf("the pass after the second loss: %v", err)
	}
	if r, f := count(rows), count(findings); r != 1 || f != 1 || rep.Findings != 0 {
		t.Fatalf("after the second loss: %d rows, %d findings, %d counted by the pass, want 1, 1 and 0 (%+v)", r, f, rep.Findings, rep)
	}
}
