//go:build stack

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/workertest"
)

const body = `{"customer_id":"cus_1","currency":"USD","items":[{"sku":"sku-1","quantity":2,"unit_amount":1299}],"payment_method":"pm_card_visa"}`

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// apiHarness serves the real router against the real stack with a real worker.
type apiHarness struct {
	*workertest.Orders
	url     string
	keys    map[string]string // tenant -> API key
	tenants []string
	logs    *syncBuffer
}

func newAPI(t *testing.T, cancelWindow time.Duration) *apiHarness {
	t.Helper()
	return newAPIWith(t, cancelWindow, apikeys.DefaultCacheTTL)
}

// newAPIWith is newAPI with the API key cache TTL given.
func newAPIWith(t *testing.T, cancelWindow, keyTTL time.Duration) *apiHarness {
	t.Helper()
	h := &apiHarness{Orders: workertest.NewOrders(t), keys: map[string]string{}, logs: &syncBuffer{}}
	h.StartWorker(t)
	ks := apikeys.New(h.Pool, keyTTL)
	for range 2 {
		tenant := stacktest.Name("tenant")
		key, err := ks.Create(context.Background(), tenant)
		if err != nil {
			t.Fatal(err)
		}
		h.keys[tenant] = key
		h.tenants = append(h.tenants, tenant)
	}
	handler := httpapi.NewServer(httpapi.Deps{
		Logger:       slog.New(slog.NewJSONHandler(h.logs, nil)),
		Registry:     prometheus.NewRegistry(),
		Keys:         ks,
		Intake:       h.APIIntake(cancelWindow),
		MaxBodyBytes: 64 << 10,
	})
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

type response struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration // set by timedPost
}

func (r response) order(t *testing.T) wire.Order {
	t.Helper()
	var v wire.Order
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode order %q: %v", r.body, err)
	}
	return v
}

func (r response) problemType() string {
	var p struct{ Type, Field string }
	_ = json.Unmarshal(r.body, &p)
	return strings.TrimPrefix(p.Type, "https://orderflow.dev/problems/")
}

func do(t *testing.T, method, url, apiKey, body string, hdr map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (h *apiHarness) post(t *testing.T, tenant, key, body string, hdr map[string]string) response {
	t.Helper()
	all := map[string]string{"Idempotency-Key": key}
	for k, v := range hdr {
		all[k] = v
	}
	return do(t, http.MethodPost, h.url+"/v1/orders", h.keys[tenant], body, all)
}

func (h *apiHarness) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := h.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (h *apiHarness) waitStatus(t *testing.T, tenant, id string, want order.Status) {
	t.Helper()
	stacktest.Eventually(t, 30*time.Second, "order "+id+" to be "+string(want), func() bool {
		r := do(t, http.MethodGet, h.url+"/v1/orders/"+id, h.keys[tenant], "", nil)
		return r.status == 200 && r.order(t).Status == string(want)
	})
}

func TestConcurrentPostsWithOneKeyMakeOneOrder(t *testing.T) {
	h := newAPI(t, 0)
	tenant, key := h.tenants[0], "concurrent-"+stacktest.Name("k")
	const n = 50
	results := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = h.post(t, tenant, key, body, nil) })
	}
	wg.Wait()

	ids := map[string]bool{}
	firsts, replays, conflicts, retries := 0, 0, 0, 0
	for _, r := range results {
		for r.status == http.StatusConflict {
			conflicts++
			if r.header.Get("Retry-After") == "" || r.problemType() != "request-in-progress" {
				t.Fatalf("409 without Retry-After or with type %q", r.problemType())
			}
			time.Sleep(200 * time.Millisecond)
			r = h.post(t, tenant, key, body, nil)
			retries++
		}
		if r.status != http.StatusAccepted {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if r.header.Get("Idempotent-Replayed") == "true" {
			replays++
		} else {
			firsts++
		}
		ids[r.order(t).ID] = true
	}
	t.Logf("50 concurrent POSTs: %d first, %d replays, %d answered 409 first, %d retries", firsts, replays, conflicts, retries)
	wantID := order.IDFor(order.WorkflowID(tenant, order.FromHTTP, key))
	if len(ids) != 1 || !ids[wantID] || firsts != 1 {
		t.Fatalf("order IDs %v, first responses %d: want only %s, once", ids, firsts, wantID)
	}
	if c := h.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, tenant); c != 1 {
		t.Fatalf("orders rows = %d", c)
	}
	if c := h.count(t, `SELECT count(*) FROM idempotency_keys WHERE tenant = $1`, tenant); c != 1 {
		t.Fatalf("idempotency rows = %d", c)
	}
	h.waitStatus(t, tenant, wantID, order.StatusPaid)
	if c := len(h.Sim.ChargesForOrder(order.IDFor(order.WorkflowID(tenant, order.FromHTTP, key)))); c != 1 {
		t.Fatalf("charges = %d", c)
	}
	if c := len(h.Sim.Charges("")); c != 1 {
		t.Fatalf("charges at the sandbox = %d", c)
	}
}

func TestSameKeyDifferentBodyIs422(t *testing.T) {
	h := newAPI(t, 0)
	tenant, key := h.tenants[0], stacktest.Name("k")
	if r := h.post(t, tenant, key, body, nil); r.status != http.StatusAccepted {
		t.Fatalf("first POST: %d %s", r.status, r.body)
	}
	other := strings.Replace(body, `"quantity":2`, `"quantity":3`, 1)
	r := h.post(t, tenant, key, other, nil)
	if r.status != http.StatusUnprocessableEntity || r.problemType() != "idempotency-key-reused" ||
		r.header.Get("Content-Type") != "application/problem+json" || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("got %d %v %s", r.status, r.header, r.body)
	}
	// Formatting does not make a different request.
	reformatted := "{\n  " + strings.TrimPrefix(body, "{")
	if r := h.post(t, tenant, key, reformatted, nil); r.status != http.StatusAccepted || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("reformatted body: %d %s", r.status, r.body)
	}
	if c := h.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, tenant); c != 1 {
		t.Fatalf("orders rows = %d", c)
	}
}

func TestTenantsAreIsolated(t *testing.T) {
	h := newAPI(t, 0)
	a, b := h.tenants[0], h.tenants[1]
	key := stacktest.Name("shared-key")
	ra, rb := h.post(t, a, key, body, nil), h.post(t, b, key, body, nil)
	if ra.status != 202 || rb.status != 202 || rb.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("statuses %d %d, replayed %q", ra.status, rb.status, rb.header.Get("Idempotent-Replayed"))
	}
	oa, ob := ra.order(t), rb.order(t)
	if oa.ID == ob.ID {
		t.Fatal("two tenants got the same order")
	}
	for _, c := range []struct {
		tenant, id string
		want       int
	}{{a, oa.ID, 200}, {b, ob.ID, 200}, {a, ob.ID, 404}, {b, oa.ID, 404}} {
		if r := do(t, http.MethodGet, h.url+"/v1/orders/"+c.id, h.keys[c.tenant], "", nil); r.status != c.want {
			t.Errorf("tenant %s GET %s = %d, want %d", c.tenant, c.id, r.status, c.want)
		}
	}
	if r := do(t, http.MethodPost, h.url+"/v1/orders/"+ob.ID+"/cancel", h.keys[a], "", nil); r.status != 404 {
		t.Errorf("cross-tenant cancel = %d, want 404", r.status)
	}
	r := do(t, http.MethodGet, h.url+"/v1/orders", h.keys[a], "", nil)
	var list struct{ Data []wire.Order }
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Data) != 1 || list.Data[0].ID != oa.ID {
		t.Fatalf("tenant a's list = %s (%v)", r.body, err)
	}
}

func TestPreferWaitAndReplay(t *testing.T) {
	h := newAPI(t, 0)
	tenant, key := h.tenants[0], stacktest.Name("k")
	first := h.post(t, tenant, key, body, map[string]string{"Prefer": "wait=20"})
	if first.status != http.StatusCreated || first.order(t).Status != string(order.StatusPaid) {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	if loc := first.header.Get("Location"); loc != "/v1/orders/"+first.order(t).ID {
		t.Fatalf("Location = %q", loc)
	}
	again := h.post(t, tenant, key, body, nil)
	if again.status != first.status || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %q %s, want %d and the first body", again.status, again.header.Get("Idempotent-Replayed"), again.body, first.status)
	}
}

// A shop keeps paid orders cancellable for ten minutes: the workflow runs on after
// the order is paid, and a client waiting for the order is answered 201 PAID once
// it is paid, not 202 when its wait runs out (a wait that would end with the
// workflow answers 202 after 30 s: the status tells the two apart, on a busy
// machine too).
func TestPreferWaitAnswersWhenPaidNotWhenTheWorkflowEnds(t *testing.T) {
	h := newAPI(t, 10*time.Minute)
	tenant := h.tenants[0]
	for i := range 3 {
		began := time.Now()
		r := h.post(t, tenant, stacktest.Name("k"), body, map[string]string{"Prefer": "wait=30"})
		took := time.Since(began)
		if r.status != http.StatusCreated || r.order(t).Status != string(order.StatusPaid) {
			t.Fatalf("POST %d with Prefer: wait=30: %d %s after %s, want 201 PAID before the wait ran out", i, r.status, r.body, took)
		}
		t.Logf("POST %d: 201 PAID in %s", i, took.Round(time.Millisecond))
	}
}

func TestCancel(t *testing.T) {
	h := newAPI(t, time.Hour)
	tenant := h.tenants[0]
	paid := h.post(t, tenant, stacktest.Name("k"), body, nil).order(t)
	h.waitStatus(t, tenant, paid.ID, order.StatusPaid)
	for i := range 2 { // cancelling twice answers the same
		r := do(t, http.MethodPost, h.url+"/v1/orders/"+paid.ID+"/cancel", h.keys[tenant], "", nil)
		if r.status != 200 || r.order(t).Status != string(order.StatusCancelled) {
			t.Fatalf("cancel #%d: %d %s", i+1, r.status, r.body)
		}
	}
	if n := len(h.Sim.Charges("")); n != 1 {
		t.Fatalf("charges = %d", n)
	}
	ch := h.Sim.Charges("")[0]
	if !ch.Refunded {
		t.Fatalf("charge %s not refunded", ch.ID)
	}

	declined := strings.Replace(body, "pm_card_visa", "pm_card_chargeDeclined", 1)
	d := h.post(t, tenant, stacktest.Name("k"), declined, nil).order(t)
	h.waitStatus(t, tenant, d.ID, order.StatusPaymentDeclined)
	if r := do(t, http.MethodPost, h.url+"/v1/orders/"+d.ID+"/cancel", h.keys[tenant], "", nil); r.status != 409 || r.problemType() != "not-cancellable" {
		t.Fatalf("cancel of a declined order: %d %s", r.status, r.body)
	}
}

func TestEveryRouteNeedsAValidKey(t *testing.T) {
	h := newAPI(t, 0)
	for _, route := range []struct{ method, path string }{
		{"POST", "/v1/orders"}, {"GET", "/v1/orders"}, {"GET", "/v1/orders/ord_x"}, {"POST", "/v1/orders/ord_x/cancel"},
	} {
		for _, key := range []string{"", "of_000000000000_nope", "garbage"} {
			r := do(t, route.method, h.url+route.path, key, "", map[string]string{"Idempotency-Key": "k"})
			if r.status != 401 || r.problemType() != "unauthorized" {
				t.Errorf("%s %s with key %q: %d", route.method, route.path, key, r.status)
			}
		}
	}
	// A valid key with one character changed.
	k := h.keys[h.tenants[0]]
	bad := k[:len(k)-1] + string(rune('a'+(k[len(k)-1]-'a'+1)%26))
	if r := do(t, "GET", h.url+"/v1/orders", bad, "", nil); r.status != 401 {
		t.Errorf("tampered key: %d", r.status)
	}
}

func TestBadInputGetsAClear4xx(t *testing.T) {
	h := newAPI(t, 0)
	tenant := h.tenants[0]
	tests := []struct {
		name, key, body string
		hdr             map[string]string
		status          int
		kind, field     string
	}{
		{"no key", "", body, nil, 400, "idempotency-key-missing", ""},
		{"malformed key", "a b", body, nil, 400, "idempotency-key-malformed", ""},
		{"unknown field", "k1", strings.Replace(body, `"currency"`, `"card_number":"4242424242424242","currency"`, 1), nil, 400, "invalid-body", "card_number"},
		{"zero quantity", "k2", strings.Replace(body, `"quantity":2`, `"quantity":0`, 1), nil, 400, "invalid-body", "items[0].quantity"},
		{"overflow", "k3", strings.Replace(body, `"unit_amount":1299`, `"unit_amount":99999999999999999999`, 1), nil, 400, "invalid-body", "items.unit_amount"},
		{"unknown currency", "k4", strings.Replace(body, `"USD"`, `"ZZZ"`, 1), nil, 400, "invalid-body", "currency"},
		{"empty items", "k5", `{"customer_id":"c","currency":"USD","items":[],"payment_method":"pm"}`, nil, 400, "invalid-body", "items"},
		{"non-UTF-8", "k6", strings.Replace(body, "cus_1", "cus_\xff", 1), nil, 400, "invalid-body", "body"},
		{"deep nesting", "k7", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), nil, 400, "invalid-body", "body"},
		{"too large", "k8", `{"customer_id":"` + strings.Repeat("x", 70<<10) + `"}`, nil, 413, "body-too-large", ""},
		{"wrong content type", "k9", body, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported-media-type", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.key != "" {
				hdr["Idempotency-Key"] = tt.key
			}
			for k, v := range tt.hdr {
				hdr[k] = v
			}
			r := do(t, http.MethodPost, h.url+"/v1/orders", h.keys[tenant], tt.body, hdr)
			var p struct{ Field string }
			_ = json.Unmarshal(r.body, &p)
			if r.status != tt.status || r.problemType() != tt.kind || p.Field != tt.field {
				t.Fatalf("got %d %s field %q; want %d %s field %q (%s)", r.status, r.problemType(), p.Field, tt.status, tt.kind, tt.field, r.body)
			}
		})
	}
	if c := h.count(t, `SELECT count(*) FROM idempotency_keys WHERE tenant = $1`, tenant); c != 0 {
		t.Fatalf("rejected requests left %d idempotency rows", c)
	}
	// The process keeps serving, and its logs hold neither keys nor card tokens.
	if r := h.post(t, tenant, stacktest.Name("k"), body, nil); r.status != 202 {
		t.Fatalf("after bad input: %d", r.status)
	}
	logs := h.logs.String()
	for _, secret := range []string{h.keys[tenant], "pm_card_visa", "4242424242424242"} {
		if strings.Contains(logs, secret) {
			t.Fatalf("logs contain %q", secret)
		}
	}
	if !strings.Contains(logs, `"route":"/v1/orders"`) || !strings.Contains(logs, `"tenant":"`+tenant+`"`) {
		t.Fatalf("no access log line with route and tenant captured: %s", logs)
	}
}

// The API is killed with SIGKILL after the workflow start was accepted and before
// the response was written (forced by Prefer: wait with no worker running); the
// client's retry against the restarted API gets the same order.
func TestAPIKilledBeforeRespondingRetryGetsSameOrder(t *testing.T) {
	t.Parallel() // its own tenants, task queue and sandbox: it runs beside the package's other slow tests
	h, tenant, apiKey, ops, env := apiProcessHarness(t, map[string]string{"DRAIN_DELAY": "0s"})
	bin := stacktest.Binary(t, "cmd/api")
	api := stacktest.Start(t, bin, env)
	waitReady(t, "http://"+ops)

	key := stacktest.Name("k")
	workflowID := order.WorkflowID(tenant, order.FromHTTP, key)
	firstErr := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/orders", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Prefer", "wait=20")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("the first request was answered: %d", resp.StatusCode)
		}
		firstErr <- err
	}()
	stacktest.Eventually(t, 20*time.Second, "the workflow start to be accepted", func() bool {
		_, err := h.Temporal.DescribeWorkflow(context.Background(), workflowID, "")
		return err == nil
	})
	api.Kill(t)
	if err := <-firstErr; err == nil || strings.Contains(err.Error(), "answered") {
		t.Fatalf("first request: %v, want a broken connection", err)
	}

	stacktest.Start(t, bin, env)
	waitReady(t, "http://"+ops)
	h.StartWorker(t)
	var r response
	attempts := 0
	stacktest.Eventually(t, 60*time.Second, "the retry to get an order", func() bool {
		attempts++
		r = h.post(t, tenant, key, body, nil)
		if r.status == http.StatusConflict {
			wait, _ := strconv.Atoi(r.header.Get("Retry-After"))
			time.Sleep(time.Duration(min(wait, 2)) * time.Second)
		}
		return r.status == http.StatusAccepted
	})
	t.Logf("retry after SIGKILL answered after %d attempts", attempts)
	if got := r.order(t).ID; got != order.IDFor(workflowID) {
		t.Fatalf("retry got order %s, want %s", got, order.IDFor(workflowID))
	}
	h.waitStatus(t, tenant, order.IDFor(workflowID), order.StatusPaid)
	if c := h.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, tenant); c != 1 {
		t.Fatalf("orders rows = %d", c)
	}
	if c := len(h.Sim.Charges("")); c != 1 {
		t.Fatalf("charges = %d", c)
	}
}

// apiProcessHarness prepares an API process on this pipeline: a tenant and its
// key, free addresses, and the process's environment with extra on top.
func apiProcessHarness(t *testing.T, extra map[string]string) (h *apiHarness, tenant, apiKey, ops string, env map[string]string) {
	t.Helper()
	h = &apiHarness{Orders: workertest.NewOrders(t), keys: map[string]string{}}
	tenant = stacktest.Name("tenant")
	apiKey, err := apikeys.New(h.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	h.keys[tenant] = apiKey
	addr, ops := stacktest.FreeAddr(t), stacktest.FreeAddr(t)
	h.url = "http://" + addr
	env = testkit.Connections(h.Env, map[string]string{"OPS_ADDR": ops, "TASK_QUEUE": h.Queue, "API_ADDR": addr})
	for k, v := range extra {
		env[k] = v
	}
	return h, tenant, apiKey, ops, env
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	stacktest.Eventually(t, 30*time.Second, "the API to be ready", func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// SIGTERM while a Prefer: wait request waits for an order no worker runs: the wait
// is cut short at the drain, the client gets 202 with the order, and a retry with
// the key against the next process gets the same order at once, not a 409 for a
// key locked by a process that is gone.
func TestAPISIGTERMDuringPreferWaitAnswersAndFreesTheKey(t *testing.T) {
	h, tenant, apiKey, ops, env := apiProcessHarness(t, map[string]string{"DRAIN_DELAY": "1s", "SHUTDOWN_TIMEOUT": "12s"})
	bin := stacktest.Binary(t, "cmd/api")
	api := stacktest.Start(t, bin, env)
	waitReady(t, "http://"+ops)

	key := stacktest.Name("k")
	workflowID := order.WorkflowID(tenant, order.FromHTTP, key)
	type answer struct {
		status int
		at     time.Time
		err    error
	}
	first := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/orders", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Prefer", "wait=30")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- answer{err: err, at: time.Now()}
			return
		}
		resp.Body.Close()
		first <- answer{status: resp.StatusCode, at: time.Now()}
	}()
	stacktest.Eventually(t, 20*time.Second, "the workflow start to be accepted", func() bool {
		_, err := h.Temporal.DescribeWorkflow(context.Background(), workflowID, "")
		return err == nil
	})
	sent := time.Now()
	api.Signal(syscall.SIGTERM)
	a := <-first
	if a.err != nil || a.status != http.StatusAccepted {
		t.Fatalf("the waiting request after SIGTERM: %d, %v (%v after it)", a.status, a.err, a.at.Sub(sent))
	}
	if code := api.Wait(t, 20*time.Second); code != 0 {
		t.Fatalf("the API exited %d", code)
	}
	t.Logf("answered %v after SIGTERM; the process exited %v after it", a.at.Sub(sent), time.Since(sent))

	stacktest.Start(t, bin, env)
	waitReady(t, "http://"+ops)
	r := h.post(t, tenant, key, body, nil)
	if r.status != http.StatusAccepted || r.header.Get("Idempotent-Replayed") != "true" || r.order(t).ID != order.IDFor(workflowID) {
		t.Fatalf("retry after the stop: %d %s", r.status, r.body)
	}
}
