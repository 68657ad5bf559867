package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/platform/tracing"
)

const secretCustomer = "cust_secret_42"

// forget is an erasure kind: DELETE /v1/customers/{id} starts one.
type forget struct{ ingress.Kind }

type forgetRequest struct {
	CustomerID string `json:"customer_id"`
}

func (r forgetRequest) Fingerprint() []byte     { return []byte(r.CustomerID) }
func (r forgetRequest) Same(stored []byte) bool { return string(stored) == r.CustomerID }

func (forget) Name() string { return "erasure" }
func (forget) Decode(payload json.RawMessage) (ingress.Request, error) {
	var r forgetRequest
	if err := ingress.DecodeStrict(payload, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// forgotten records the customers whose erasure started.
type forgotten struct{ customers []string }

func (f *forgotten) Submit(_ context.Context, _ ingress.Kind, _, key string, req ingress.Request, _ time.Duration) intake.Result {
	f.customers = append(f.customers, req.(forgetRequest).CustomerID)
	return intake.Result{Kind: intake.Created, ID: "era_" + key, Status: http.StatusAccepted, Body: []byte(`{"id":"era_` + key + `"}`)}
}

// The requests that name a customer in their URL, DELETE /v1/customers/{id}
// and GET /v1/orders?customer_id=, leave the customer's ID in no log line and
// no span: the access log and the span record the route, not the path or query.
func TestRequestsNamingACustomerLogNoCustomer(t *testing.T) {
	var logs bytes.Buffer
	exp := tracetest.NewInMemoryExporter()
	keyed := &forgotten{}
	d := Deps{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Registry: prometheus.NewRegistry(),
		Keys: acceptAll{}, Intake: scripted{}, MaxBodyBytes: 1 << 10, Keyed: keyed,
		Tracing: tracing.With(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))),
		Kinds: []KindRoute{{Path: "erasures", Kind: forget{}, Deletes: "customers", DeleteField: "customer_id",
			Get: func(context.Context, string, string) (ingress.View, error) { return ingress.View{}, intake.ErrNotFound }}}}
	if err := CheckKinds(d); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(d))
	defer srv.Close()
	send := func(method, target string) int {
		req, err := http.NewRequest(method, srv.URL+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send(http.MethodDelete, "/v1/customers/"+secretCustomer); code != http.StatusAccepted {
		t.Fatalf("DELETE: %d", code)
	}
	if code := send(http.MethodGet, "/v1/orders?customer_id="+secretCustomer); code != http.StatusOK {
		t.Fatalf("GET: %d", code)
	}
	if len(keyed.customers) != 1 || keyed.customers[0] != secretCustomer {
		t.Fatalf("erasures started for %v", keyed.customers)
	}
	if n := strings.Count(logs.String(), `"msg":"http request"`); n != 2 {
		t.Fatalf("%d access log lines captured, want 2:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), secretCustomer) {
		t.Fatalf("the logs name the customer:\n%s", logs.String())
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for _, s := range spans {
		text := s.Name
		for _, a := range s.Attributes {
			text += " " + string(a.Key) + "=" + a.Value.String()
		}
		if strings.Contains(text, secretCustomer) || !strings.Contains(text, "url.path=/v1/") {
			t.Errorf("span: %s", text)
		}
	}
}
