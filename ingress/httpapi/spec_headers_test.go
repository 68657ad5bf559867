package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/ingress/refunds"
	"github.com/orderflow/orderflow/ingress/webhooks"
	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/quota"
)

// scripted answers each call as its Idempotency-Key or order id says; bodies
// decode as the order kind's.
type scripted struct{}

func (scripted) Decode(body []byte) (intake.Request, error) {
	r, err := orders.DecodeRequest(body)
	return r, err
}

func (scripted) Place(_ context.Context, _, key string, _ intake.Request, wait time.Duration) intake.Result {
	return byKey(key, "ord_1", wait)
}

// byKey is a keyed start's outcome as its Idempotency-Key says, for a workflow
// of public ID id: "created" (201 with a wait, else 202), "replayed",
// "mismatch", "in-flight"; any other key finds Temporal down.
func byKey(key, id string, wait time.Duration) intake.Result {
	expires := time.Now().Add(24 * time.Hour)
	switch key {
	case "created":
		status := http.StatusAccepted
		if wait > 0 {
			status = http.StatusCreated
		}
		return intake.Result{Kind: intake.Created, ID: id, Status: status, Body: []byte(`{}`), KeyExpires: expires}
	case "replayed":
		return intake.Result{Kind: intake.Replayed, ID: id, Status: http.StatusAccepted, Body: []byte(`{}`), KeyExpires: expires}
	case "mismatch":
		return intake.Result{Kind: intake.Mismatch, ID: id}
	case "in-flight":
		return intake.Result{Kind: intake.InFlight, RetryAfter: time.Second}
	}
	return intake.Result{Kind: intake.Unavailable, Err: errors.New("down")}
}

func (scripted) Get(_ context.Context, _, id string) (wire.Order, error) {
	switch id {
	case "ord_1":
		return wire.Order{ID: id}, nil
	case "ord_missing":
		return wire.Order{}, intake.ErrNotFound
	}
	return wire.Order{}, errors.New("down")
}

func (scripted) List(_ context.Context, _ string, f intake.Filter) ([]wire.Order, string, error) {
	switch f.Cursor {
	case "":
		return []wire.Order{{ID: "ord_1"}}, "", nil
	case "stale":
		return nil, "", intake.ErrBadCursor
	}
	return nil, "", errors.New("down")
}

func (scripted) Cancel(_ context.Context, _, id string) (wire.Order, error) {
	switch id {
	case "ord_1":
		return wire.Order{ID: id}, nil
	case "ord_missing":
		return wire.Order{}, intake.ErrNotFound
	case "ord_shipped":
		return wire.Order{}, &ingress.Refusal{Problem: "not-cancellable", Detail: "the order is PAID"}
	}
	return wire.Order{}, errors.New("down")
}

type scriptedRefunds struct{}

func (scriptedRefunds) Decode(body []byte, orderID string) (ingress.Request, error) {
	r, err := refunds.DecodeHTTP(body, orderID)
	return r, err
}

func (scriptedRefunds) Request(_ context.Context, _, key string, _ ingress.Request, wait time.Duration) intake.Result {
	switch key {
	case "no-order":
		return intake.Result{Kind: intake.Refused, Err: &ingress.Refusal{Problem: "not-found", Detail: "no such order"}}
	case "not-refundable":
		return intake.Result{Kind: intake.Refused, Err: &ingress.Refusal{Problem: "order-not-refundable", Detail: "CANCELLED"}}
	}
	return byKey(key, "rfd_1", wait)
}

func (scriptedRefunds) Get(_ context.Context, _, id string) (wire.Refund, error) {
	switch id {
	case "rfd_1":
		return wire.Refund{ID: id}, nil
	case "rfd_missing":
		return wire.Refund{}, intake.ErrNotFound
	}
	return wire.Refund{}, errors.New("down")
}

func (scriptedRefunds) List(_ context.Context, _, orderID string, _ int, cursor string) ([]wire.Refund, string, error) {
	switch {
	case orderID == "ord_missing":
		return nil, "", intake.ErrNotFound
	case cursor == "":
		return []wire.Refund{{ID: "rfd_1"}}, "", nil
	case cursor == "stale":
		return nil, "", intake.ErrBadCursor
	}
	return nil, "", errors.New("down")
}

// keysByName: "k-acme" is acme's, "k-spent" a tenant over its budget, "k-busy"
// cannot be checked now, anything else is not a key.
type keysByName struct{}

func (keysByName) Tenant(_ context.Context, key string) (string, error) {
	switch key {
	case "k-acme":
		return "acme", nil
	case "k-spent":
		return "spent", nil
	case "k-busy":
		return "", apikeys.ErrBusy
	}
	return "", apikeys.ErrUnauthorized
}

type spentTenant struct{}

func (spentTenant) Allow(_ context.Context, tenant string) (quota.Decision, error) {
	if tenant == "spent" {
		return quota.Decision{Quota: 10, Window: 1, Reset: 1, RetryAfter: 1}, nil
	}
	return quota.Decision{Allowed: true, Quota: 10, Window: 1, Remaining: 9, Reset: 1}, nil
}

// The spec declares every header the API sends, on the operation and status that
// sends it: a recorded answer of every status of every operation is compared
// with it, and every status the spec declares for /v1 is among them.
func TestEveryHeaderTheAPISendsIsInTheSpec(t *testing.T) {
	reg := prometheus.NewRegistry()
	hooks, err := webhooks.New(webhooks.Deps{Secrets: []string{"whsec_test"}, Registry: reg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg,
		Keys: keysByName{}, Intake: scripted{}, Refunds: scriptedRefunds{}, Quota: spentTenant{}, MaxBodyBytes: 1 << 10, Webhooks: hooks,
		Keyed: scriptedKeyed{}, Kinds: []KindRoute{erasureRoute()}}))
	t.Cleanup(srv.Close)
	const order = `{"customer_id":"c","currency":"USD","items":[{"sku":"s","quantity":1,"unit_amount":1}],"payment_method":"pm_card_visa"}`
	type call = specCall
	post := func(key string, hdr map[string]string) call {
		return call{"POST", "/v1/orders", "/v1/orders", key, "k-acme", order, hdr}
	}
	rpost := func(key string, hdr map[string]string) call {
		return call{"POST", "/v1/orders/ord_1/refunds", "/v1/orders/{id}/refunds", key, "k-acme", `{"amount":100,"reason":"duplicate"}`, hdr}
	}
	calls := []call{
		post("created", nil), post("created", map[string]string{"Prefer": "wait=5"}), post("replayed", nil),
		post("mismatch", nil), post("in-flight", nil), post("down", nil), post("", nil), post("bad key", nil),
		{"POST", "/v1/orders", "/v1/orders", "k", "k-acme", "{", nil},
		{"POST", "/v1/orders", "/v1/orders", "k", "k-acme", strings.Repeat("x", 2<<10), nil},
		{"POST", "/v1/orders", "/v1/orders", "k", "k-acme", order, map[string]string{"Content-Type": "text/plain"}},
		{"POST", "/v1/orders", "/v1/orders", "k", "", order, nil},
		{"POST", "/v1/orders", "/v1/orders", "k", "k-nobody", order, nil},
		{"POST", "/v1/orders", "/v1/orders", "k", "k-busy", order, nil},
		{"POST", "/v1/orders", "/v1/orders", "k", "k-spent", order, nil},
		{"GET", "/v1/orders", "/v1/orders", "", "k-acme", "", nil},
		{"GET", "/v1/orders?cursor=stale", "/v1/orders", "", "k-acme", "", nil},
		{"GET", "/v1/orders?limit=0", "/v1/orders", "", "k-acme", "", nil},
		{"GET", "/v1/orders?cursor=down", "/v1/orders", "", "k-acme", "", nil},
		{"GET", "/v1/orders", "/v1/orders", "", "k-spent", "", nil},
		{"GET", "/v1/orders", "/v1/orders", "", "", "", nil},
		{"GET", "/v1/orders/ord_1", "/v1/orders/{id}", "", "k-acme", "", nil},
		{"GET", "/v1/orders/ord_missing", "/v1/orders/{id}", "", "k-acme", "", nil},
		{"GET", "/v1/orders/" + strings.Repeat("x", 300), "/v1/orders/{id}", "", "k-acme", "", nil},
		{"GET", "/v1/orders/ord_down", "/v1/orders/{id}", "", "k-acme", "", nil},
		{"GET", "/v1/orders/ord_1", "/v1/orders/{id}", "", "k-spent", "", nil},
		{"GET", "/v1/orders/ord_1", "/v1/orders/{id}", "", "k-nobody", "", nil},
		{"POST", "/v1/orders/ord_1/cancel", "/v1/orders/{id}/cancel", "", "k-acme", "", nil},
		{"POST", "/v1/orders/ord_missing/cancel", "/v1/orders/{id}/cancel", "", "k-acme", "", nil},
		{"POST", "/v1/orders/ord_shipped/cancel", "/v1/orders/{id}/cancel", "", "k-acme", "", nil},
		{"POST", "/v1/orders/" + strings.Repeat("x", 300) + "/cancel", "/v1/orders/{id}/cancel", "", "k-acme", "", nil},
		{"POST", "/v1/orders/ord_down/cancel", "/v1/orders/{id}/cancel", "", "k-acme", "", nil},
		{"POST", "/v1/orders/ord_1/cancel", "/v1/orders/{id}/cancel", "", "k-spent", "", nil},
		{"POST", "/v1/orders/ord_1/cancel", "/v1/orders/{id}/cancel", "", "", "", nil},
		rpost("created", nil), rpost("created", map[string]string{"Prefer": "wait=5"}), rpost("replayed", nil),
		rpost("mismatch", nil), rpost("in-flight", nil), rpost("down", nil), rpost("", nil), rpost("bad key", nil),
		rpost("no-order", nil), rpost("not-refundable", nil),
		{"POST", "/v1/orders/ord_1/refunds", "/v1/orders/{id}/refunds", "k", "k-acme", `{"amount":0}`, nil},
		{"POST", "/v1/orders/ord_1/refunds", "/v1/orders/{id}/refunds", "k", "k-acme", strings.Repeat("x", 2<<10), nil},
		{"POST", "/v1/orders/ord_1/refunds", "/v1/orders/{id}/refunds", "k", "k-acme", "{}", map[string]string{"Content-Type": "text/plain"}},
		{"POST", "/v1/orders/ord_1/refunds", "/v1/orders/{id}/refunds", "k", "", "{}", nil},
		{"POST", "/v1/orders/ord_1/refunds", "/v1/orders/{id}/refunds", "k", "k-spent", "{}", nil},
		{"GET", "/v1/orders/ord_1/refunds", "/v1/orders/{id}/refunds", "", "k-acme", "", nil},
		{"GET", "/v1/orders/ord_missing/refunds", "/v1/orders/{id}/refunds", "", "k-acme", "", nil},
		{"GET", "/v1/orders/ord_1/refunds?limit=0", "/v1/orders/{id}/refunds", "", "k-acme", "", nil},
		{"GET", "/v1/orders/ord_1/refunds?cursor=down", "/v1/orders/{id}/refunds", "", "k-acme", "", nil},
		{"GET", "/v1/orders/ord_1/refunds", "/v1/orders/{id}/refunds", "", "k-spent", "", nil},
		{"GET", "/v1/orders/ord_1/refunds", "/v1/orders/{id}/refunds", "", "", "", nil},
		{"GET", "/v1/refunds/rfd_1", "/v1/refunds/{id}", "", "k-acme", "", nil},
		{"GET", "/v1/refunds/rfd_missing", "/v1/refunds/{id}", "", "k-acme", "", nil},
		{"GET", "/v1/refunds/" + strings.Repeat("x", 300), "/v1/refunds/{id}", "", "k-acme", "", nil},
		{"GET", "/v1/refunds/rfd_down", "/v1/refunds/{id}", "", "k-acme", "", nil},
		{"GET", "/v1/refunds/rfd_1", "/v1/refunds/{id}", "", "k-spent", "", nil},
		{"GET", "/v1/refunds/rfd_1", "/v1/refunds/{id}", "", "", "", nil},
		{"GET", "/openapi.yaml", "/openapi.yaml", "", "", "", nil},
		{"POST", "/webhooks/stripe", "/webhooks/stripe", "", "", `{"id":"evt_1"}`, map[string]string{"Stripe-Signature": "t=1,v1=00"}},
		{"POST", "/webhooks/stripe", "/webhooks/stripe", "", "", strings.Repeat("x", webhooks.MaxBodyBytes+1), nil},
		{"DELETE", "/v1/orders", "", "", "k-acme", "", nil},
		{"GET", "/nope", "", "", "k-acme", "", nil},
	}
	calls = append(calls, erasureCalls()...)
	spec := loadSpec(t)
	seen := map[string]bool{}
	for _, c := range calls {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		if c.key != "" {
			req.Header.Set("Idempotency-Key", c.key)
		}
		if c.apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+c.apiKey)
		}
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status := strconv.Itoa(resp.StatusCode)
		declared, ok := spec.headers(c.route, c.method, status)
		if !ok {
			t.Errorf("%s %s answered %s, which the spec does not declare", c.method, c.path, status)
			continue
		}
		seen[strings.ToLower(c.method)+" "+c.route+" "+status] = true
		for name := range resp.Header {
			if transport[name] {
				continue
			}
			if !declared[strings.ToLower(name)] {
				t.Errorf("%s %s (%s) sends %s, which the spec does not declare there", c.method, c.path, status, name)
			}
		}
		if c.hdr["Prefer"] != "" && resp.Header.Get("Preference-Applied") != "wait=5" {
			t.Errorf("Prefer: wait=5 answered Preference-Applied %q", resp.Header.Get("Preference-Applied"))
		}
	}
	var unseen []string
	for op, statuses := range spec.statuses() {
		if !strings.Contains(op, "/v1/") {
			continue // the webhook's other answers need a store
		}
		for _, s := range statuses {
			if !seen[op+" "+s] {
				unseen = append(unseen, op+" "+s)
			}
		}
	}
	sort.Strings(unseen)
	if len(unseen) > 0 {
		t.Errorf("the spec declares answers the recorded set lacks: %s", strings.Join(unseen, "; "))
	}
}

// transport are the fields HTTP itself sends, which OpenAPI does not declare.
var transport = map[string]bool{"Content-Type": true, "Content-Length": true, "Date": true, "Connection": true, "Transfer-Encoding": true}

type openAPI struct {
	Paths      map[string]map[string]struct{ Responses map[string]response } `json:"paths"`
	Components struct {
		Responses map[string]response `json:"responses"`
	} `json:"components"`
}

type response struct {
	Ref     string         `json:"$ref"`
	Headers map[string]any `json:"headers"`
}

func loadSpec(t *testing.T) openAPI {
	var s openAPI
	if err := yaml.Unmarshal(openapiSpec, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// headers are the fields the spec declares for an operation's answer; an answer
// of no operation (an unknown route, a method a path does not take) is one of the
// shared responses.
func (s openAPI) headers(route, method, status string) (map[string]bool, bool) {
	var r response
	switch {
	case route == "" && status == "405":
		r = s.Components.Responses["MethodNotAllowed"]
	case route == "" && status == "404":
		r = s.Components.Responses["Problem"]
	default:
		var ok bool
		if r, ok = s.Paths[route][strings.ToLower(method)].Responses[status]; !ok {
			return nil, false
		}
	}
	if r.Ref != "" {
		r = s.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
	}
	out := map[string]bool{}
	for name := range r.Headers {
		out[strings.ToLower(name)] = true
	}
	return out, true
}

func (s openAPI) statuses() map[string][]string {
	out := map[string][]string{}
	for path, ops := range s.Paths {
		for method, op := range ops {
			for status := range op.Responses {
				out[method+" "+path] = append(out[method+" "+path], status)
			}
		}
	}
	return out
}

// Every problem kind, of the API and of the webhook endpoint, is documented in
// docs/problems/README.md, under a heading that is its URL's fragment, and
// nothing else is.
func TestEveryProblemTypeIsDocumented(t *testing.T) {
	raw, err := os.ReadFile("../../docs/problems/README.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok && !strings.Contains(h, " ") {
			documented[h] = true
		}
	}
	// Kinds lists the constants of problems.go: read them from the source.
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "problems.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "kind" {
				lit := vs.Values[0].(*ast.BasicLit)
				consts[strings.Trim(lit.Value, `"`)] = true
			}
		}
		return true
	})
	kinds := append(Kinds(), webhooks.ProblemKinds()...)
	if len(Kinds()) != len(consts) {
		t.Errorf("Kinds lists %d kinds, problems.go declares %d", len(Kinds()), len(consts))
	}
	for _, k := range kinds {
		if !documented[k] {
			t.Errorf("problem kind %s has no section in docs/problems/README.md", k)
		}
		delete(documented, k)
	}
	for k := range documented {
		t.Errorf("docs/problems/README.md documents %s, which nothing answers", k)
	}
}

// A problem's type is the configured base and its kind, on /v1 and on the
// webhook endpoint.
func TestProblemTypesAreBuiltFromTheBase(t *testing.T) {
	const base = "https://docs.example/problems.md#"
	reg := prometheus.NewRegistry()
	hooks, err := webhooks.New(webhooks.Deps{Secrets: []string{"whsec_test"}, Registry: reg, ProblemBase: base,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg,
		Keys: keysByName{}, Intake: scripted{}, MaxBodyBytes: 1 << 10, Webhooks: hooks, ProblemBase: base}))
	t.Cleanup(srv.Close)
	for path, want := range map[string]string{"/v1/orders/ord_missing": "not-found", "/webhooks/stripe": "webhook-stale"} {
		method := http.MethodGet
		if strings.HasPrefix(path, "/webhooks") {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer k-acme")
		req.Header.Set("Stripe-Signature", "t=1,v1=00")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Type string }
		_ = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if p.Type != base+want {
			t.Errorf("%s: type %q, want %q", path, p.Type, base+want)
		}
	}
}
