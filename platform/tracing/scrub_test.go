package tracing

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

const secret = "cust_secret_42"

// spanText is everything an exported span says: its name, its attributes',
// its events' and its status's.
func spanText(s tracetest.SpanStub) string {
	var b strings.Builder
	b.WriteString(s.Name + "\n" + s.Status.Description + "\n")
	for _, a := range s.Attributes {
		b.WriteString(string(a.Key) + "=" + a.Value.String() + "\n")
	}
	for _, e := range s.Events {
		b.WriteString(e.Name + "\n")
		for _, a := range e.Attributes {
			b.WriteString(string(a.Key) + "=" + a.Value.String() + "\n")
		}
	}
	return b.String()
}

func attr(s tracetest.SpanStub, key string) (string, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String(), true
		}
	}
	return "", false
}

// A customer's ID in the path of DELETE /v1/customers/{id} or in a query
// (GET /v1/orders?customer_id=) is in no span the server or a client exports:
// the path is the route's pattern, the query is not recorded.
func TestSpansNameNoCustomer(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := With(tp)
	mux := http.NewServeMux()
	mux.HandleFunc("DELETE /v1/customers/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	mux.HandleFunc("GET /v1/orders", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "[]") })
	h := tr.Handler(mux, "orderflow.api")
	for _, target := range []string{"/v1/customers/" + secret, "/v1/orders?customer_id=" + secret, "/v1/customers/" + secret + "/orders?x=" + secret} {
		method := http.MethodGet
		if strings.HasPrefix(target, "/v1/customers/") {
			method = http.MethodDelete
		}
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, target, nil))
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := &http.Client{Transport: tr.Transport(http.DefaultTransport)}
	resp, err := client.Get(srv.URL + "/v1/orders?customer_id=" + secret)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("%d spans exported, want 4", len(spans))
	}
	for _, s := range spans {
		if text := spanText(s); strings.Contains(text, secret) {
			t.Errorf("a span names the customer:\n%s", text)
		}
	}
	want := []struct{ key, value string }{
		{"url.path", "/v1/customers/{id}"},
		{"url.path", "/v1/orders"},
		{"url.path", "/v1/customers/{id}/orders"},
		{"url.full", srv.URL + "/v1/orders"},
	}
	for i, w := range want {
		if v, ok := attr(spans[i], w.key); !ok || v != w.value {
			t.Errorf("span %d (%s): %s = %q, want %q", i, spans[i].Name, w.key, v, w.value)
		}
	}
	if spans[0].Name != "DELETE /v1/customers/{id}" {
		t.Errorf("the DELETE's span is named %q", spans[0].Name)
	}
}

func TestScrubbedPaths(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/customers/c1":          "/v1/customers/{id}",
		"/v1/customers/{id}":        "/v1/customers/{id}",
		"/v1/customers/":            "/v1/customers/",
		"/v1/customers/c1/receipts": "/v1/customers/{id}/receipts",
		"/api/v1/customers/cus_9":   "/api/v1/customers/{id}",
		"/v1/orders/ord_1":          "/v1/orders/ord_1",
	} {
		if got := scrubPath(in); got != want {
			t.Errorf("scrubPath(%q) = %q, want %q", in, got, want)
		}
	}
	if got := scrubURL("https://u:p@api.example/v1/customers/c1?email=a#f"); got != "https://api.example/v1/customers/%7Bid%7D" &&
		got != "https://api.example/v1/customers/{id}" {
		t.Errorf("scrubURL = %q", got)
	}
	if got := scrubName("GET /v1/customers/c1?x=c1"); got != "GET /v1/customers/{id}" {
		t.Errorf("scrubName = %q", got)
	}
}
