package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every request names the client, its version and the Go runtime in its
// User-Agent, retries and every operation alike, so whoever runs the API can
// tell which clients call it.
func TestEveryRequestNamesTheClientInItsUserAgent(t *testing.T) {
	if !regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(Version) {
		t.Fatalf("Version %q is not a semantic version", Version)
	}
	var mu sync.Mutex
	var agents []string
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.Method+" "+r.URL.Path+": "+r.Header.Get("User-Agent"))
		n++
		first := n == 1
		mu.Unlock()
		if first { // the first attempt is retried
			problemAnswer(503, KindUnavailable)(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/refunds") && r.Method == http.MethodPost:
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, pendingRefund)
		case r.URL.Path == "/v1/orders" && r.Method == http.MethodGet,
			strings.HasSuffix(r.URL.Path, "/refunds"):
			_, _ = io.WriteString(w, `{"data":[],"has_more":false}`)
		default:
			_, _ = io.WriteString(w, `{"id":"ord_1","status":"PAID"}`)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL, APIKey: "k", MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := []func() error{
		func() error { _, err := c.GetOrder(ctx, "ord_1"); return err },
		func() error { _, err := c.PlaceOrder(ctx, OrderRequest{CustomerID: "cus_1"}); return err },
		func() error { _, err := c.CancelOrder(ctx, "ord_1"); return err },
		func() error { _, err := c.ListOrders(ctx, ListParams{}); return err },
		func() error { _, err := c.RefundOrder(ctx, "ord_1", "rf-1", RefundRequest{}); return err },
		func() error { _, err := c.GetRefund(ctx, "rfd_1"); return err },
		func() error { _, err := c.ListRefunds(ctx, "ord_1", RefundListParams{}); return err },
	}
	for i, call := range calls {
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	want := "orderflow-go/" + Version + " (" + runtime.Version() + "; " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if len(agents) != len(calls)+1 {
		t.Fatalf("%d requests for %d calls and a retry", len(agents), len(calls))
	}
	for _, a := range agents {
		if !strings.HasSuffix(a, ": "+want) {
			t.Errorf("%s, want User-Agent %s", a, want)
		}
	}
}
