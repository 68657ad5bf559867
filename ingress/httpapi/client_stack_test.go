//go:build stack

package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderflow/orderflow/client"
	"github.com/orderflow/orderflow/orders/order"
)

// faultProxy stands between the client and the API and answers each request as
// its script says: "503" and "409" without forwarding, with Retry-After: 1;
// "drop" forwards it, then drops the connection before the client reads a byte
// of the answer; "pass" (and everything past the script) forwards it.
type faultProxy struct {
	api    string
	mu     sync.Mutex
	script []string
	seen   []proxied
}

type proxied struct {
	at       time.Time // the request arrived
	answered time.Time // its answer was sent, or its connection dropped
	key      string
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	step := "pass"
	if n := len(p.seen); n < len(p.script) {
		step = p.script[n]
	}
	n := len(p.seen)
	p.seen = append(p.seen, proxied{at: time.Now(), key: r.Header.Get("Idempotency-Key")})
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.seen[n].answered = time.Now()
		p.mu.Unlock()
	}()
	switch step {
	case "503", "409":
		kind := map[string]string{"503": "unavailable", "409": "request-in-progress"}[step]
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(map[string]int{"503": 503, "409": 409}[step])
		_, _ = io.WriteString(w, `{"type":"https://orderflow.dev/problems/`+kind+`","title":"injected","status":`+step+`}`)
		return
	}
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.api+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if step == "drop" {
		conn, _, _ := http.NewResponseController(w).Hijack()
		_ = conn.Close() // the API acted; its answer is lost on the way
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

func (p *faultProxy) requests() []proxied {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]proxied(nil), p.seen...)
}

// The client's one logical call, retried through injected 503s, 409s and dropped
// connections, makes one order and one charge; it waits Retry-After (measured);
// a 422 and a 404 are never retried.
func TestClientRetriesOneOrderThroughFaults(t *testing.T) {
	h := newAPI(t, 0)
	tenant := h.tenants[0]
	proxy := &faultProxy{api: h.url, script: []string{"503", "drop", "409", "drop", "pass"}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Options{BaseURL: srv.URL, APIKey: h.keys[tenant], MinBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	req := client.OrderRequest{CustomerID: "cus_1", Currency: "USD", Items: []client.Item{{SKU: "sku-1", Quantity: 2, UnitAmount: 1299}},
		PaymentMethod: "pm_card_visa"}
	ctx := context.Background()
	placed, err := c.PlaceOrder(ctx, req, client.WithWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	seen := proxy.requests()
	// Go's transport itself resends a request with an Idempotency-Key once when a
	// reused connection drops before the answer: fewer calls than requests.
	if len(seen) != 5 || placed.Attempts < 3 || placed.Attempts > 5 || !placed.Replayed || placed.KeyExpires.IsZero() {
		t.Fatalf("placed %+v after %d requests, want 5 requests, the last one replayed", placed, len(seen))
	}
	for _, r := range seen {
		if r.key != placed.Key {
			t.Fatalf("an attempt carried key %q, the call's is %q", r.key, placed.Key)
		}
	}
	// A gap runs from an answer (or a drop) to the next attempt: a dropped request
	// was forwarded, and the API may take its time on a busy machine.
	for _, i := range []int{1, 3} { // after the 503 and the 409, both Retry-After: 1
		if gap := seen[i].at.Sub(seen[i-1].answered); gap < time.Second || gap > 1500*time.Millisecond {
			t.Errorf("attempt %d came %s after a Retry-After: 1, want 1 s to 1.25 s and a little", i+1, gap)
		} else {
			t.Logf("Retry-After: 1 honoured: the next attempt came %s later", gap.Round(time.Millisecond))
		}
	}
	if gap := seen[2].at.Sub(seen[1].answered); gap >= time.Second {
		t.Errorf("a dropped connection's retry waited %s, want a short backoff", gap)
	}
	workflowID := order.WorkflowID(tenant, order.FromHTTP, placed.Key)
	if n := h.count(t, `SELECT count(*) FROM orders WHERE tenant = $1 AND workflow_id = $2`, tenant, workflowID); n != 1 {
		t.Fatalf("orders for the key: %d, want 1", n)
	}
	h.waitStatus(t, tenant, placed.ID, order.StatusPaid)
	if n := len(h.Sim.ChargesForOrder(placed.ID)); n != 1 {
		t.Fatalf("charges for the order: %d, want 1", n)
	}
	got, err := c.GetOrder(ctx, placed.ID)
	if err != nil || got.Status != client.Paid {
		t.Fatalf("GetOrder: %+v, %v", got, err)
	}
	page, err := c.ListOrders(ctx, client.ListParams{IdempotencyKey: placed.Key})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != placed.ID {
		t.Fatalf("ListOrders by key: %+v, %v", page, err)
	}

	// Another body with the key: 422 once, never retried; an unknown order: 404 once.
	before := len(proxy.requests())
	other := req
	other.Items = []client.Item{{SKU: "sku-2", Quantity: 1, UnitAmount: 5}}
	_, err = c.PlaceOrder(ctx, other, client.WithKey(placed.Key))
	var p *client.Problem
	if !errors.As(err, &p) || p.Status != 422 || p.Kind() != client.KindKeyReused || !strings.HasPrefix(p.RequestID, "req_") {
		t.Fatalf("another body with the key: %v", err)
	}
	_, err = c.GetOrder(ctx, "ord_nope")
	if !errors.As(err, &p) || p.Kind() != client.KindNotFound {
		t.Fatalf("unknown order: %v", err)
	}
	if n := len(proxy.requests()) - before; n != 2 {
		t.Fatalf("a 422 and a 404 took %d requests, want 1 each", n)
	}
	if n := h.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, tenant); n != 1 {
		t.Fatalf("the tenant's orders: %d, want 1", n)
	}
}
