//go:build stack

package orderstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// The API records an order after its start, and the workflow's first step records
// it too: both at once must leave one row and fail neither. (The orders table has
// two unique keys, id and workflow_id; an insert arbitrated on one of them alone
// fails with a unique violation on the other when the two inserts meet.)
func TestConcurrentRecordsOfOneOrderBothSucceed(t *testing.T) {
	pool := stacktest.Pool(t)
	store := orderstore.New(pool)
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	const orders, writers = 200, 4

	var mu sync.Mutex
	var failures []error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, err)
	}
	for i := range orders {
		wf := order.WorkflowID(tenant, order.FromHTTP, stacktest.Name("k"))
		o := order.Order{ID: order.IDFor(wf), Tenant: tenant, WorkflowID: wf, CustomerID: "cus_1", Currency: "USD",
			Items: []order.Item{{SKU: "sku", Quantity: 1, UnitAmount: 100 + int64(i)}}, Amount: 100 + int64(i)}
		var start, wg sync.WaitGroup
		start.Add(1)
		for w := range writers {
			wg.Go(func() {
				start.Wait()
				if w%2 == 0 { // the workflow's step
					if err := store.Insert(ctx, o); err != nil {
						fail(err)
					}
					return
				}
				v, err := store.Record(ctx, o) // the API's
				if err != nil {
					fail(err)
				} else if v.ID != o.ID || v.Status != order.StatusPending {
					t.Errorf("recorded %s %s, want %s PENDING", v.ID, v.Status, o.ID)
				}
			})
		}
		start.Done()
		wg.Wait()
	}
	if len(failures) > 0 {
		t.Fatalf("%d of %d records failed; first: %v", len(failures), orders*writers, failures[0])
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE tenant = $1`, tenant).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != orders {
		t.Fatalf("rows = %d, want %d", rows, orders)
	}
}
