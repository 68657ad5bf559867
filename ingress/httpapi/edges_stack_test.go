//go:build stack

package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// otherBody is body with another quantity: another order.
var otherBody = strings.Replace(body, `"quantity":2`, `"quantity":5`, 1)

func (h *apiHarness) list(t *testing.T, tenant, query string) []order.Status {
	t.Helper()
	r := do(t, http.MethodGet, h.url+"/v1/orders?"+query, h.keys[tenant], "", nil)
	if r.status != 200 {
		t.Fatalf("list %s: %d %s", query, r.status, r.body)
	}
	var page struct {
		Data []struct {
			ID     string
			Amount int64
			Status order.Status
		}
	}
	if err := json.Unmarshal(r.body, &page); err != nil {
		t.Fatal(err)
	}
	var out []order.Status
	for _, o := range page.Data {
		out = append(out, o.Status)
	}
	return out
}

// A tenant's producer used eventId X; then its HTTP client sends Idempotency-Key X
// with another body. The POST gets its own order, never the event's.
func TestHTTPKeyEqualToAnEventIDIsItsOwnOrder(t *testing.T) {
	h := newAPI(t, 0)
	tenant := h.tenants[0]
	req, err := orders.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	// The consumer's path: the intake service with an event.
	ev := h.ConsumerIntake(stacktest.Name("group")).SubmitEvent(context.Background(), h.OrderKind(), tenant, "X", req)
	if ev.Kind != intake.Created {
		t.Fatalf("event placement: %+v", ev)
	}
	r := h.post(t, tenant, "X", otherBody, nil)
	if r.status != 202 {
		t.Fatalf("POST with the eventId as key: %d %s", r.status, r.body)
	}
	got := r.order(t)
	if got.ID == ev.ID || got.Amount != 5*1299 {
		t.Fatalf("POST answered order %s amount %d; the event's order is %s: want its own order of %d", got.ID, got.Amount, ev.ID, 5*1299)
	}
	// Each is found by the key that made it (the event's order row is written by its
	// workflow).
	stacktest.Eventually(t, 30*time.Second, "the event's order in Postgres", func() bool {
		return len(h.list(t, tenant, "event_id=X")) == 1
	})
	byKey := do(t, http.MethodGet, h.url+"/v1/orders?idempotency_key=X", h.keys[tenant], "", nil)
	byEvent := do(t, http.MethodGet, h.url+"/v1/orders?event_id=X", h.keys[tenant], "", nil)
	if !strings.Contains(string(byKey.body), got.ID) || strings.Contains(string(byKey.body), ev.ID) ||
		!strings.Contains(string(byEvent.body), ev.ID) || strings.Contains(string(byEvent.body), got.ID) {
		t.Fatalf("lookups: by key %s; by event %s", byKey.body, byEvent.body)
	}
	// Another tenant finds neither.
	if n := len(h.list(t, h.tenants[1], "event_id=X")) + len(h.list(t, h.tenants[1], "idempotency_key=X")); n != 0 {
		t.Fatalf("another tenant's lookups found %d orders", n)
	}
}

// Every value Postgres would refuse, in every route's path, query and body, is a 400
// naming the parameter: never a 503, never a lookup.
func TestUnrepresentableInputIs400(t *testing.T) {
	h := newAPI(t, 0)
	k := h.keys[h.tenants[0]]
	long := strings.Repeat("x", 256)
	tests := []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"get NUL", "GET", "/v1/orders/ord_%00", "", 400, "id"},
		{"get invalid UTF-8", "GET", "/v1/orders/ord_%FF%FE", "", 400, "id"},
		{"get too long", "GET", "/v1/orders/" + long, "", 400, "id"},
		{"cancel NUL", "POST", "/v1/orders/ord_%00/cancel", "", 400, "id"},
		{"cancel invalid UTF-8", "POST", "/v1/orders/%C3%28/cancel", "", 400, "id"},
		{"list customer NUL", "GET", "/v1/orders?customer_id=a%00b", "", 400, "customer_id"},
		{"list customer invalid UTF-8", "GET", "/v1/orders?customer_id=%FF", "", 400, "customer_id"},
		{"list cursor NUL", "GET", "/v1/orders?cursor=%00", "", 400, "cursor"},
		{"list status invalid UTF-8", "GET", "/v1/orders?status=%FF", "", 400, "status"},
		{"lookup key NUL", "GET", "/v1/orders?idempotency_key=%00", "", 400, "idempotency_key"},
		{"lookup event invalid UTF-8", "GET", "/v1/orders?event_id=%E2%82", "", 400, "event_id"},
		{"lookup too long", "GET", "/v1/orders?event_id=" + long, "", 400, "event_id"},
		{"body NUL", "POST", "/v1/orders", strings.Replace(body, "cus_1", `cus\u0000`, 1), 400, "customer_id"},
		{"body invalid UTF-8", "POST", "/v1/orders", strings.Replace(body, "sku-1", "sku-\xc3\x28", 1), 400, "body"},
		{"unknown order", "GET", "/v1/orders/ord_nope", "", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.method == "POST" && tt.body != "" {
				hdr["Idempotency-Key"] = stacktest.Name("k")
			}
			r := do(t, tt.method, h.url+tt.path, k, tt.body, hdr)
			var p struct{ Field string }
			_ = json.Unmarshal(r.body, &p)
			if r.status != tt.status || p.Field != tt.field {
				t.Fatalf("%s %s: %d field %q (%s); want %d naming %q", tt.method, tt.path, r.status, p.Field, r.body, tt.status, tt.field)
			}
		})
	}
}

// A key first used before a deploy that changed the request type (its stored
// fingerprint is version 0, the JSON of the old struct) replays after it.
func TestRetryAcrossADeployReplays(t *testing.T) {
	h := newAPI(t, 0)
	tenant, key := h.tenants[0], stacktest.Name("k")
	v0 := sha256.Sum256([]byte(`{"customer_id":"cus_1","currency":"USD","items":[{"sku":"sku-1","quantity":2,"unit_amount":1299}],"payment_method":"pm_card_visa"}`))
	stored := `{"id":"ord_before"}`
	if _, err := h.Pool.Exec(context.Background(), `
		INSERT INTO idempotency_keys (tenant, key, fingerprint, workflow_id, response_status, response_body, expires_at)
		VALUES ($1, $2, $3, $4, 202, $5, now() + interval '1 hour')`,
		tenant, key, v0[:], order.WorkflowID(tenant, order.FromEvent, key), []byte(stored)); err != nil {
		t.Fatal(err)
	}
	r := h.post(t, tenant, key, body, nil)
	if r.status != 202 || string(r.body) != stored || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry of a request from before the deploy: %d %s", r.status, r.body)
	}
	if r := h.post(t, tenant, key, otherBody, nil); r.status != 422 {
		t.Fatalf("another body with that key: %d, want 422", r.status)
	}
}

// A revoked API key is refused within the key cache's TTL.
func TestRevokedKeyIsRefusedWithinTheCacheTTL(t *testing.T) {
	h := newAPIWith(t, 0, 300*time.Millisecond)
	tenant := h.tenants[0]
	if r := do(t, "GET", h.url+"/v1/orders", h.keys[tenant], "", nil); r.status != 200 {
		t.Fatalf("before: %d", r.status)
	}
	ks := apikeys.New(h.Pool, apikeys.DefaultCacheTTL)
	infos, err := ks.List(context.Background(), tenant)
	if err != nil || len(infos) != 1 || !strings.HasPrefix(h.keys[tenant], infos[0].Prefix+"_") {
		t.Fatalf("list = %+v, %v", infos, err)
	}
	for _, i := range infos {
		if strings.Contains(i.Prefix, h.keys[tenant][len(infos[0].Prefix)+1:]) {
			t.Fatal("list shows the secret")
		}
	}
	if err := ks.Revoke(context.Background(), infos[0].Prefix); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, 2*time.Second, "the revoked key to be refused", func() bool {
		return do(t, "GET", h.url+"/v1/orders", h.keys[tenant], "", nil).status == 401
	})
	if err := ks.Revoke(context.Background(), infos[0].Prefix); err == nil {
		t.Fatal("revoking twice: no error")
	}
	if r := do(t, "GET", h.url+"/v1/orders", h.keys[h.tenants[1]], "", nil); r.status != 200 {
		t.Fatalf("the other tenant's key: %d", r.status)
	}
}

// The longest Idempotency-Key the API takes, full of the characters that triple in
// the workflow ID, is charged once and PAID: the provider's key is of fixed length.
func TestLongestKeyIsPaid(t *testing.T) {
	h := newAPI(t, 0)
	tenant, key := h.tenants[0], strings.Repeat(":%", 127)+"k"
	r := h.post(t, tenant, key, body, nil)
	if r.status != 202 || len(key) != 255 {
		t.Fatalf("POST with a %d-character key: %d %s", len(key), r.status, r.body)
	}
	id := r.order(t).ID
	h.waitStatus(t, tenant, id, order.StatusPaid)
	if n := len(h.Sim.ChargesForOrder(id)); n != 1 {
		t.Fatalf("charges = %d, want 1", n)
	}
}
