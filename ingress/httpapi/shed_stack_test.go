//go:build stack

package httpapi_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/client"
	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/workertest"
)

// Above its bound of waiters the API sheds a POST at once with 503 and
// Retry-After, before it claims a key or starts a workflow; the POSTs it took
// on finish PAID; a client that honours Retry-After gets every order in.
func TestAboveTheBoundPostsAreShedAndClientsGetInLater(t *testing.T) {
	h := workertest.NewOrders(t)
	tenant := stacktest.Name("shed")
	key, err := apikeys.New(h.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Keys: apikeys.New(h.Pool, apikeys.DefaultCacheTTL), Intake: h.APIIntake(time.Minute), MaxBodyBytes: 64 << 10,
		Shed: httpapi.ShedLimits{Posts: 4, Waiters: 2}}))
	defer srv.Close()
	// No worker yet: the two admitted POSTs wait for their orders.
	var wg sync.WaitGroup
	admitted := make([]response, 2)
	for i := range admitted {
		wg.Go(func() {
			admitted[i] = do(t, "POST", srv.URL+"/v1/orders", key, body, map[string]string{"Prefer": "wait=25", "Idempotency-Key": "held-" + strconv.Itoa(i)})
		})
	}
	for i := range admitted {
		wf := order.WorkflowID(tenant, order.FromHTTP, "held-"+strconv.Itoa(i))
		stacktest.Eventually(t, 15*time.Second, "an admitted POST's run", func() bool { return stacktest.Runs(t, h.Temporal, wf) == 1 })
	}
	began := time.Now()
	r := do(t, "POST", srv.URL+"/v1/orders", key, body, map[string]string{"Prefer": "wait=25", "Idempotency-Key": "over"})
	retry, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 503 || r.problemType() != "unavailable" || retry < 1 || time.Since(began) > 2*time.Second {
		t.Fatalf("a POST over the bound: %d %s, Retry-After %q, after %s", r.status, r.problemType(), r.header.Get("Retry-After"), time.Since(began))
	}
	var claimed int
	if err := h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE tenant = $1 AND key = 'over'`, tenant).Scan(&claimed); err != nil {
		t.Fatal(err)
	}
	if runs := stacktest.Runs(t, h.Temporal, order.WorkflowID(tenant, order.FromHTTP, "over")); claimed != 0 || runs != 0 {
		t.Fatalf("the shed POST claimed %d keys and started %d runs", claimed, runs)
	}
	h.StartWorker(t)
	wg.Wait()
	for i, a := range admitted {
		// A wait that ran out (a run beside the other lanes took over 25 s)
		// answers 202 with the order as it stood: it must end PAID all the same.
		paid := a.status == 201 && a.order(t).Status == "PAID"
		if !paid && a.status == 202 {
			id := a.order(t).ID
			paid = stacktest.Within(2*time.Minute, func() bool {
				g := do(t, "GET", srv.URL+"/v1/orders/"+id, key, "", nil)
				return g.status == 200 && g.order(t).Status == "PAID"
			})
		}
		if !paid {
			t.Fatalf("admitted POST %d: %d %s, not PAID", i, a.status, a.body)
		}
	}
	placeThroughTheClient(t, h, srv.URL, key, tenant)
}

// placeThroughTheClient places 8 orders at once with Prefer: wait through the
// client, which retries the 503s after Retry-After: all 8 end PAID, once each.
func placeThroughTheClient(t *testing.T, h *workertest.Orders, url, key, tenant string) {
	c, err := client.New(client.Options{BaseURL: url, APIKey: key, MaxAttempts: 50, MaxElapsed: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	req := client.OrderRequest{CustomerID: "cus_1", Currency: "USD", PaymentMethod: "pm_card_visa",
		Items: []client.Item{{SKU: "sku-1", Quantity: 2, UnitAmount: 1299}}}
	var wg sync.WaitGroup
	attempts := make([]int, 8)
	for i := range attempts {
		wg.Go(func() {
			p, err := c.PlaceOrder(context.Background(), req, client.WithKey("client-"+strconv.Itoa(i)), client.WithWait(20*time.Second))
			if err != nil {
				t.Errorf("order %d: %v", i, err)
				return
			}
			attempts[i] = p.Attempts
		})
	}
	wg.Wait()
	retried := 0
	for _, a := range attempts {
		if a > 1 {
			retried++
		}
	}
	stacktest.Eventually(t, time.Minute, "the tenant's 10 orders PAID", func() bool {
		var paid int
		_ = h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE tenant = $1 AND status = 'PAID'`, tenant).Scan(&paid)
		return paid == 10
	})
	var orders int
	if err := h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE tenant = $1`, tenant).Scan(&orders); err != nil {
		t.Fatal(err)
	}
	if orders != 10 || retried == 0 {
		t.Fatalf("%d orders of the tenant (want 2 + 8), %d of the client's calls retried a 503 (want some)", orders, retried)
	}
}
