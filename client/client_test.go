package client

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
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
		{409, KindInProgress, true}, {409, KindNotCancelable, false}, {429, KindQuotaExceeded, true},
		{503, KindUnavailable, true}, {502, "", true}, {400, KindInvalidBody, false}, {401, KindUnauthorized, false},
		{404, KindNotFound, false}, {413, "body-too-large", false}, {422, KindKeyReused, false},
	} {
		p := &Problem{Status: c.status, Type: "https://orderflow.dev/problems/" + c.kind}
		if p.Retryable() != c.want {
			t.Errorf("%d %s: retryable %t", c.status, c.kind, !c.want)
		}
	}
}

// The README's example is Example, word for word, so it compiles.
func TestTheREADMEShowsTheExampleThatCompiles(t *testing.T) {
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
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(lines, "\n"); body == "" || !strings.Contains(string(readme), want) {
		t.Fatalf("README.md does not show client.Example's body:\n%s", want)
	}
}
