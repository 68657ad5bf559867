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
	// admit sends the key again, after Retry-After, while it is answered 503 (a
	// start that ran past its budget on a busy machine, which a client retries
	// with the same key), and then 409 (that start's claim until its lease runs
	// out) or 429 (the budget the retries spent), for up to a minute; a 409 or
	// 429 with no 503 before it is the answer.
	admit := func(tenant, key string) response {
		unavailable := false
		for deadline := time.Now().Add(time.Minute); ; {
			r := post(tenant, key)
			unavailable = unavailable || r.status == 503
			again := r.status == 503 || (unavailable && (r.status == 409 || r.status == 429))
			if !again || time.Now().After(deadline) {
				return r
			}
			after, _ := strconv.Atoi(r.header.Get("Retry-After"))
			time.Sleep(time.Duration(max(after, 1)) * time.Second)
		}
	}
	began := time.Now()
	for _, k := range []string{"k1", "k2"} {
		if r := admit(a, k); r.status != 202 || r.header.Get("RateLimit-Policy") != `"tenant";q=2;w=10` {
			t.Fatalf("POST %s: %d, RateLimit-Policy %q", k, r.status, r.header.Get("RateLimit-Policy"))
		}
	}
	// The next POST is refused, unless the first two took over 5 s (a busy
	// machine), in which case the budget let one more in per 5 s since.
	var over string
	var r response
	for i := 0; ; i++ {
		over = fmt.Sprintf("k3-%d", i)
		if r = post(a, over); r.status == 429 {
			break
		}
		if refilled := int(time.Since(began).Seconds() * 0.2); i >= refilled {
			t.Fatalf("POST %s answered %d, not 429: %d past the burst of 2, with %d refilled in %s", over, r.status, i+1, refilled, time.Since(began).Round(time.Second))
		}
	}
	retry, _ := strconv.Atoi(r.header.Get("Retry-After"))
	// Full again 10 s after the budget was spent, at 0.2 a second: t counts
	// down from 10 meanwhile.
	var reset int
	_, scanErr := fmt.Sscanf(r.header.Get("RateLimit"), `"tenant";r=0;t=%d`, &reset)
	if r.status != 429 || r.problemType() != "quota-exceeded" || retry < 1 || scanErr != nil || reset < 1 || reset > 10 {
		t.Fatalf("over the budget: %d %s, Retry-After %q, RateLimit %q", r.status, r.problemType(), r.header.Get("Retry-After"), r.header.Get("RateLimit"))
	}
	wf := order.WorkflowID(a, order.FromHTTP, over)
	var claimed int
	if err := h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE tenant = $1 AND key = $2`, a, over).Scan(&claimed); err != nil {
		t.Fatal(err)
	}
	if claimed != 0 || stacktest.Runs(t, h.Temporal, wf) != 0 {
		t.Fatalf("the refused POST claimed %d keys and started %d runs", claimed, stacktest.Runs(t, h.Temporal, wf))
	}
	if r := do(t, "GET", srv.URL+"/v1/orders", keys[a], "", nil); r.status != 429 {
		t.Fatalf("a GET over the budget: %d, want 429", r.status)
	}
	if r := admit(b, "k3"); r.status != 202 {
		t.Fatalf("another tenant meanwhile: %d", r.status)
	}
	time.Sleep(time.Duration(retry) * time.Second)
	if r := admit(a, over); r.status != 202 {
		t.Fatalf("the same key after Retry-After: %d", r.status)
	}
	stacktest.Eventually(t, 10*time.Second, "the order's run", func() bool { return stacktest.Runs(t, h.Temporal, wf) == 1 })
}
