package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/tenants/apikeys"
)

type refuseAll struct{}

func (refuseAll) Tenant(context.Context, string) (string, error) { return "", apikeys.ErrUnauthorized }

// Nothing an unauthenticated caller chooses becomes a label: 10,000 requests with
// made-up methods and paths leave the number of metric series as it was.
func TestMadeUpMethodsAndPathsAddNoSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg,
		Keys: refuseAll{}, MaxBodyBytes: 1 << 10}))
	t.Cleanup(srv.Close)
	send := func(method, path string) {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	series := func() int {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, mf := range mfs {
			n += len(mf.GetMetric())
		}
		return n
	}
	// Every kind of answer once: 401 on each route, 404, 405, a made-up method.
	for _, p := range []string{"/v1/orders", "/v1/orders/x", "/v1/orders/x/cancel", "/nope", "/v1/nope"} {
		for _, m := range []string{http.MethodGet, http.MethodPost, "BREW"} {
			send(m, p)
		}
	}
	before := series()
	for i := range 10000 {
		send(fmt.Sprintf("M%08X", rand.Uint32()), fmt.Sprintf("/v1/orders/%d/%x", i, rand.Uint64()))
	}
	if after := series(); after != before {
		t.Fatalf("%d series after 10,000 made-up requests, %d before", after, before)
	}
}
