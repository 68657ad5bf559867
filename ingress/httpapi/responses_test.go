package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Every response names its request (Request-Id, one of ours: never the client's),
// a problem's instance is that ID, and a method the path does not take is a 405
// of its own type with Allow.
func TestRequestIDsAndMethodNotAllowed(t *testing.T) {
	server := func(keys KeyStore) *httptest.Server {
		srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry(),
			Keys: keys, MaxBodyBytes: 1 << 10}))
		t.Cleanup(srv.Close)
		return srv
	}
	srv := server(refuseAll{})
	send := func(method, path string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("X-Request-Id", "forged-by-the-client")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	id := regexp.MustCompile(`^req_[0-9a-f]{24}$`)
	seen := map[string]bool{}
	for _, path := range []string{"/v1/orders", "/nope", "/openapi.yaml"} {
		resp, body := send(http.MethodGet, path) //nolint:bodyclose // send closed it
		rid := resp.Header.Get("Request-Id")
		if !id.MatchString(rid) || seen[rid] {
			t.Fatalf("GET %s: Request-Id %q", path, rid)
		}
		seen[rid] = true
		if resp.StatusCode >= 400 && body["instance"] != "urn:orderflow:request:"+rid {
			t.Fatalf("GET %s: problem instance %v, Request-Id %s", path, body["instance"], rid)
		}
	}
	srv = server(acceptAll{})
	for path, allow := range map[string]string{"/v1/orders": "GET, POST", "/v1/orders/x": "GET", "/v1/orders/x/cancel": "POST"} {
		resp, body := send(http.MethodDelete, path) //nolint:bodyclose // send closed it
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != allow ||
			!strings.HasSuffix(body["type"].(string), "/method-not-allowed") {
			t.Fatalf("DELETE %s: %d Allow %q type %v", path, resp.StatusCode, resp.Header.Get("Allow"), body["type"])
		}
	}
}

type acceptAll struct{}

func (acceptAll) Tenant(context.Context, string) (string, error) { return "acme", nil }
