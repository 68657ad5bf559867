package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A call stops at its budget: MaxAttempts requests, or a retry that would start
// after MaxElapsed is not made.
func TestRetriesStopAtTheBudget(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Request-Id", "req_1")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL, APIKey: "k", MaxAttempts: 3, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetOrder(context.Background(), "ord_1")
	var p *Problem
	if !errors.As(err, &p) || p.Status != 503 || p.RequestID != "req_1" || hits.Load() != 3 {
		t.Fatalf("after %d requests: %v", hits.Load(), err)
	}
	hits.Store(0)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	c.o.MaxAttempts, c.o.MaxElapsed = 10, 5*time.Second
	start := time.Now()
	_, err = c.CancelOrder(context.Background(), "ord_1")
	if !errors.As(err, &p) || p.Status != 429 || hits.Load() != 1 || time.Since(start) > time.Second {
		t.Fatalf("a Retry-After past the budget: %d requests in %s: %v", hits.Load(), time.Since(start), err)
	}
}

// Only what may succeed later is retried.
func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		status int
		kind   string
		want   bool
	}{
		{409, KindInProgress, true}, {409, KindNotCancelable, false}, {409, KindNotRefundable, false}, {429, KindQuotaExceeded, true},
		{503, KindUnavailable, true}, {502, "", true}, {400, KindInvalidBody, false}, {401, KindUnauthorized, false},
		{404, KindNotFound, false}, {413, "body-too-large", false}, {422, KindKeyReused, false},
	} {
		p := &Problem{Status: c.status, Type: "https://orderflow.dev/problems/" + c.kind}
		if p.Retryable() != c.want {
			t.Errorf("%d %s: retryable %t", c.status, c.kind, !c.want)
		}
	}
}

// The README's example is Example, word for word, so it compiles. The README is
// the repository's: outside it (the module alone, as a user's build fetches it)
// there is none to check.
func TestTheREADMEShowsTheExampleThatCompiles(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("not in the repository: no ../README.md")
	}
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "example_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var body string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Example" {
			body = string(src[fn.Body.Lbrace : fn.Body.Rbrace-1])
		}
	}
	var lines []string
	for _, l := range strings.Split(strings.Trim(body, "{\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	if want := strings.Join(lines, "\n"); body == "" || !strings.Contains(string(readme), want) {
		t.Fatalf("README.md does not show client.Example's body:\n%s", want)
	}
}

// refundServer answers POST /v1/orders/ord_1/refunds with answers, one per request
// (the last one again once they run out), and records every request.
type refundServer struct {
	mu   sync.Mutex
	seen []*http.Request
	body []string
}

func (rs *refundServer) start(t *testing.T, answers ...func(w http.ResponseWriter)) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rs.mu.Lock()
		n := len(rs.seen)
		rs.seen, rs.body = append(rs.seen, r), append(rs.body, string(raw))
		rs.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/orders/ord_1/refunds" {
			http.NotFound(w, r)
			return
		}
		answers[min(n, len(answers)-1)](w)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL, APIKey: "k", MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func problemAnswer(status int, kind string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Request-Id", "req_1")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"https://orderflow.dev/problems/%s","title":"t","status":%d}`, kind, status)
	}
}

const pendingRefund = `{"id":"rfd_ue6kfrsig3acwmbd3ceir34rmb","order_id":"ord_1","status":"PENDING","amount":0,` +
	`"amount_requested":500,"reason":"requested_by_customer","created_at":"2026-01-02T10:00:00Z","updated_at":"2026-01-02T10:00:00Z"}`

// A refund whose first attempt meets a 503, a request in progress or a broken
// connection is sent again, the same request with the same key, until it is
// answered.
func TestRefundOrderRetriesWithTheSameKey(t *testing.T) {
	var rs refundServer
	c := rs.start(t, problemAnswer(503, KindUnavailable), problemAnswer(409, KindInProgress),
		func(w http.ResponseWriter) { // the connection breaks before an answer
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		},
		func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Location", "/v1/refunds/rfd_ue6kfrsig3acwmbd3ceir34rmb")
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, pendingRefund)
		})
	got, err := c.RefundOrder(context.Background(), "ord_1", "rf-1", RefundRequest{Amount: 500, Reason: ReasonRequestedByCustomer})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "rfd_ue6kfrsig3acwmbd3ceir34rmb" || got.OrderID != "ord_1" || got.Status != RefundPending ||
		got.AmountRequested != 500 || got.Reason != ReasonRequestedByCustomer || got.CreatedAt.IsZero() {
		t.Fatalf("refund %+v", got)
	}
	if len(rs.seen) != 4 {
		t.Fatalf("%d requests, want 4", len(rs.seen))
	}
	for i, r := range rs.seen {
		if k := r.Header.Get("Idempotency-Key"); k != "rf-1" {
			t.Errorf("attempt %d: Idempotency-Key %q", i+1, k)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("attempt %d: Content-Type %q", i+1, ct)
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(rs.body[i]), &body); err != nil || len(body) != 2 ||
			body["amount"] != float64(500) || body["reason"] != "requested_by_customer" {
			t.Errorf("attempt %d: body %s", i+1, rs.body[i])
		}
	}
}

// A refund the API refuses for good is not sent again: 409 order-not-refundable,
// and so are 404 and 422.
func TestRefundOrderRefusedIsFinal(t *testing.T) {
	for _, c := range []struct {
		status int
		kind   string
	}{{409, KindNotRefundable}, {404, KindNotFound}, {422, KindKeyReused}} {
		var rs refundServer
		cl := rs.start(t, problemAnswer(c.status, c.kind))
		_, err := cl.RefundOrder(context.Background(), "ord_1", "rf-1", RefundRequest{})
		var p *Problem
		if !errors.As(err, &p) || p.Status != c.status || p.Kind() != c.kind || p.RequestID != "req_1" {
			t.Errorf("%d %s: %v", c.status, c.kind, err)
		}
		if len(rs.seen) != 1 {
			t.Errorf("%d %s: %d requests, want 1", c.status, c.kind, len(rs.seen))
		}
	}
}

// The zero RefundRequest asks for what is left ({}), and a refund without its key
// is refused before any request: a key the caller does not keep cannot be sent
// again when the caller starts over.
func TestRefundOrderBodyAndKey(t *testing.T) {
	var rs refundServer
	c := rs.start(t, func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, pendingRefund)
	})
	if _, err := c.RefundOrder(context.Background(), "ord_1", "", RefundRequest{}); err == nil || len(rs.seen) != 0 {
		t.Fatalf("no key: %v after %d requests", err, len(rs.seen))
	}
	if _, err := c.RefundOrder(context.Background(), "ord_1", "rf-2", RefundRequest{}); err != nil {
		t.Fatal(err)
	}
	if rs.body[0] != "{}" {
		t.Fatalf("the zero request sent %s", rs.body[0])
	}
}

// GetRefund reads /v1/refunds/{id}; ListRefunds reads an order's refunds page by
// page, the cursor of one page asking for the next.
func TestGetRefundAndListRefundsPageByPage(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.RequestURI())
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.EscapedPath() == "/v1/refunds/rfd_1":
			_, _ = io.WriteString(w, `{"id":"rfd_1","order_id":"ord_1","status":"FAILED","amount":0,"amount_requested":900,`+
				`"failure":"amount_exceeds_refundable: 900 over 400 left","created_at":"2026-01-02T10:00:00Z","updated_at":"2026-01-02T10:00:01Z"}`)
		case r.Method == http.MethodGet && r.URL.EscapedPath() == "/v1/orders/ord_1/refunds" && r.URL.Query().Get("cursor") == "":
			_, _ = io.WriteString(w, `{"data":[{"id":"rfd_2","order_id":"ord_1","status":"SUCCEEDED","amount":300,"amount_requested":300,`+
				`"currency":"USD","created_at":"2026-01-02T10:00:02Z","updated_at":"2026-01-02T10:00:03Z"}],"has_more":true,"next_cursor":"c2"}`)
		case r.Method == http.MethodGet && r.URL.EscapedPath() == "/v1/orders/ord_1/refunds" && r.URL.Query().Get("cursor") == "c2":
			_, _ = io.WriteString(w, `{"data":[{"id":"rfd_1","order_id":"ord_1","status":"FAILED","amount":0,"amount_requested":900,`+
				`"created_at":"2026-01-02T10:00:00Z","updated_at":"2026-01-02T10:00:01Z"}],"has_more":false}`)
		default:
			problemAnswer(404, KindNotFound)(w)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := c.GetRefund(ctx, "rfd_1")
	if err != nil || r.Status != RefundFailed || !strings.HasPrefix(r.Failure, "amount_exceeds_refundable") || r.AmountRequested != 900 {
		t.Fatalf("GetRefund: %+v, %v", r, err)
	}
	var ids []string
	p := RefundListParams{Limit: 1}
	for {
		page, err := c.ListRefunds(ctx, "ord_1", p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Data {
			ids = append(ids, r.ID)
		}
		if !page.HasMore {
			break
		}
		p.Cursor = page.NextCursor
	}
	if strings.Join(ids, ",") != "rfd_2,rfd_1" {
		t.Fatalf("pages held %v", ids)
	}
	if want := "/v1/refunds/rfd_1 /v1/orders/ord_1/refunds?limit=1 /v1/orders/ord_1/refunds?cursor=c2&limit=1"; strings.Join(paths, " ") != want {
		t.Fatalf("requests %v, want %s", paths, want)
	}
	_, err = c.GetRefund(ctx, "rfd/../x")
	var prob *Problem
	if !errors.As(err, &prob) || prob.Kind() != KindNotFound || paths[len(paths)-1] != "/v1/refunds/rfd%2F..%2Fx" {
		t.Fatalf("an id with a slash: %v, sent as %s", err, paths[len(paths)-1])
	}
}
