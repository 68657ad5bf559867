//go:build stack

package httpapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/fleetrate"
	"github.com/orderflow/orderflow/tenants/quota"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/workertest"
)

// A tenant over its budget gets 429 with Retry-After and the RateLimit fields;
// the refused POST starts nothing and claims no key, so the same key succeeds
// once the budget allows; another tenant is unaffected meanwhile.
func TestTenantOverItsBudgetIsRefusedAndLosesNothing(t *testing.T) {
	h := workertest.NewOrders(t)
	h.StartWorker(t)
	ks := apikeys.New(h.Pool, apikeys.DefaultCacheTTL)
	keys := map[string]string{}
	var tenants []string
	for range 2 {
		tenant := stacktest.Name("tenant")
		key, err := ks.Create(context.Background(), tenant)
		if err != nil {
			t.Fatal(err)
		}
		keys[tenant] = key
		tenants = append(tenants, tenant)
	}
	limits, err := quota.NewLimiter("api", quota.Limit{Rate: 0.2, Burst: 2}, fleetrate.New(h.Pool))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Keys: ks, Intake: h.APIIntake(time.Minute), Quota: limits, MaxBodyBytes: 64 << 10}))
	defer srv.Close()
	a, b := tenants[0], tenants[1]
	post := func(tenant, key string) response {
		return do(t, "POST", srv.URL+"/v1/orders", keys[tenant], body, map[string]string{"Idempotency-Key": key})
	}
	for _, k := range []string{"k1", "k2"} {
		if r := post(a, k); r.status != 202 || r.header.Get("RateLimit-Policy") != `"tenant";q=2;w=10` {
			t.Fatalf("POST %s: %d, RateLimit-Policy %q", k, r.status, r.header.Get("RateLimit-Policy"))
		}
	}
	r := post(a, "k3")
	retry, _ := strconv.Atoi(r.header.Get("Retry-After"))
	// Full again 10 s after the first POST at 0.2 a second (slow enough that no
	// POST is admitted while the first two take their time on a busy machine):
	// t counts down from 10 meanwhile.
	var reset int
	_, scanErr := fmt.Sscanf(r.header.Get("RateLimit"), `"tenant";r=0;t=%d`, &reset)
	if r.status != 429 || r.problemType() != "quota-exceeded" || retry < 1 || scanErr != nil || reset < 1 || reset > 10 {
		t.Fatalf("over the budget: %d %s, Retry-After %q, RateLimit %q", r.status, r.problemType(), r.header.Get("Retry-After"), r.header.Get("RateLimit"))
	}
	wf := order.WorkflowID(a, order.FromHTTP, "k3")
	var claimed int
	if err := h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE tenant = $1 AND key = $2`, a, "k3").Scan(&claimed); err != nil {
		t.Fatal(err)
	}
	if claimed != 0 || stacktest.Runs(t, h.Temporal, wf) != 0 {
		t.Fatalf("the refused POST claimed %d keys and started %d runs", claimed, stacktest.Runs(t, h.Temporal, wf))
	}
	if r := do(t, "GET", srv.URL+"/v1/orders", keys[a], "", nil); r.status != 429 {
		t.Fatalf("a GET over the budget: %d, want 429", r.status)
	}
	if r := post(b, "k3"); r.status != 202 {
		t.Fatalf("another tenant meanwhile: %d", r.status)
	}
	time.Sleep(time.Duration(retry) * time.Second)
	if r := post(a, "k3"); r.status != 202 {
		t.Fatalf("the same key after Retry-After: %d", r.status)
	}
	stacktest.Eventually(t, 10*time.Second, "the order's run", func() bool { return stacktest.Runs(t, h.Temporal, wf) == 1 })
}
