//go:build stack

package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/workertest"
)

// A POST is one trace: the API's server span, the workflow start under it, the run,
// the charge with its provider call, and the OrderPaid publish.
func TestPostIsOneTrace(t *testing.T) {
	h := workertest.NewOrders(t)
	exp := h.Traced(t)
	h.StartWorker(t)
	ks := apikeys.New(h.Pool, time.Minute)
	tenant := stacktest.Name("tenant")
	key, err := ks.Create(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Keys: ks, Intake: h.APIIntake(0), MaxBodyBytes: 64 << 10, Tracing: h.Tracing,
	}))
	t.Cleanup(srv.Close)
	if r := do(t, http.MethodPost, srv.URL+"/v1/orders", key, body, map[string]string{"Idempotency-Key": "k1"}); r.status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	spans := workertest.WaitTrace(t, exp, workertest.OrderEdges("POST /v1/orders")...)
	t.Logf("trace of one POST:\n%s", workertest.Tree(spans))
}
