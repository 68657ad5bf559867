//go:build stack

package ledger_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/testkit"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// Open under every attempt at once: one row for the key, and each attempt gets it
// as first recorded; what runs with the row runs until the key succeeds, never
// after.
func TestOpenRecordsAKeyOnce(t *testing.T) {
	pool := stacktest.Pool(t)
	ctx := context.Background()
	tenant := testkit.Name("ledger")
	o := order.Order{Tenant: tenant, WorkflowID: order.WorkflowID(tenant, order.FromHTTP, "k"), CustomerID: "c", Currency: "USD",
		Items: []order.Item{{SKU: "s", Quantity: 1, UnitAmount: 100}}, Amount: 100}
	o.ID = order.IDFor(o.WorkflowID)
	if err := orderstore.New(pool).Insert(ctx, o); err != nil {
		t.Fatal(err)
	}
	s := ledger.New(pool)
	p := ledger.Payment{Key: tenant + "-intent", Kind: ledger.Intent, OrderID: o.ID, Amount: 100, Currency: "USD"}

	var wg sync.WaitGroup
	entries, errs := make([]ledger.Entry, 32), make([]error, 32)
	for i := range entries {
		wg.Go(func() {
			q := p
			q.Amount += int64(i) // a later attempt never rewrites the row
			entries[i], errs[i] = s.Open(ctx, q, nil)
		})
	}
	wg.Wait()
	for i, e := range entries {
		if errs[i] != nil || e.Status != ledger.Pending || e.Amount != entries[0].Amount {
			t.Fatalf("attempt %d: %+v, %v; want the one pending row", i, e, errs[i])
		}
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE idempotency_key = $1`, p.Key).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d rows for the key (%v), want 1", rows, err)
	}

	if err := s.Settle(ctx, p.Key, ledger.Created, "pi_1"); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Open(ctx, p, nil); err != nil || e.Status != ledger.Created || e.ProviderID != "pi_1" {
		t.Fatalf("after settling: %+v, %v; want created pi_1", e, err)
	}

	charge := ledger.Payment{Key: tenant + "-confirm", Kind: ledger.Charge, OrderID: o.ID, Amount: 100, Currency: "USD", IntentID: "pi_1"}
	ran := 0
	with := func(pgx.Tx) error { ran++; return nil }
	for range 2 {
		if _, err := s.Open(ctx, charge, with); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Settle(ctx, charge.Key, ledger.Succeeded, "ch_1"); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Open(ctx, charge, with); err != nil || e.Status != ledger.Succeeded || e.ProviderID != "ch_1" || ran != 2 {
		t.Fatalf("after success: %+v, %v, with ran %d times; want succeeded ch_1, twice", e, err, ran)
	}
}
