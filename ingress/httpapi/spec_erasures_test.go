package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/platform/identity"
)

// specCall is a request TestEveryHeaderTheAPISendsIsInTheSpec sends; route is
// the spec's path of its operation ("" for none).
type specCall struct {
	method, path, route, key, apiKey, body string
	hdr                                    map[string]string
}

// erasureKind is the erasure kind as the API meets it: a request of one
// customer_id, refused as the real kind refuses it.
type erasureKind struct{ ingress.Kind }

type erasureRequest struct {
	CustomerID string `json:"customer_id"`
}

func (r erasureRequest) Fingerprint() []byte     { return []byte(r.CustomerID) }
func (r erasureRequest) Same(stored []byte) bool { return string(stored) == r.CustomerID }

func (erasureKind) Name() string { return "erasure" }

func (erasureKind) Decode(payload json.RawMessage) (ingress.Request, error) {
	var r erasureRequest
	if err := ingress.DecodeStrict(payload, &r); err != nil {
		return nil, err
	}
	if r.CustomerID == "" || len(r.CustomerID) > 128 || !identity.VisibleString(r.CustomerID) {
		return nil, ingress.FieldErrorf("customer_id", "must be 1-128 visible ASCII characters")
	}
	return r, nil
}

// scriptedKeyed starts erasures as their Idempotency-Key says (byKey).
type scriptedKeyed struct{}

func (scriptedKeyed) Submit(_ context.Context, _ ingress.Kind, _, key string, _ ingress.Request, wait time.Duration) intake.Result {
	return byKey(key, "era_1", wait)
}

// erasureRoute is the erasure kind's route as the root package mounts it: era_1
// is read, era_missing is none of the tenant's, any other ID finds its store down.
func erasureRoute() KindRoute {
	get := func(_ context.Context, _, id string) (ingress.View, error) {
		switch id {
		case "era_1":
			return ingress.View{ID: id, Body: []byte(`{"id":"era_1","status":"WAITING"}`)}, nil
		case "era_missing":
			return ingress.View{}, intake.ErrNotFound
		}
		return ingress.View{}, errors.New("down")
	}
	return KindRoute{Path: "erasures", Kind: erasureKind{}, Get: get, Deletes: "customers", DeleteField: "customer_id"}
}

// erasureCalls are the erasure routes' calls of every status the spec declares
// for them.
func erasureCalls() []specCall {
	const erase, read, start = "/v1/customers/{id}", "/v1/erasures/{id}", "/v1/erasures"
	del := func(key string, hdr map[string]string) specCall {
		return specCall{"DELETE", "/v1/customers/c_1", erase, key, "k-acme", "", hdr}
	}
	post := func(key string, hdr map[string]string) specCall {
		return specCall{"POST", start, start, key, "k-acme", `{"customer_id":"c_1"}`, hdr}
	}
	long := strings.Repeat("x", 300)
	return []specCall{
		del("created", nil), del("created", map[string]string{"Prefer": "wait=5"}), del("replayed", nil),
		del("mismatch", nil), del("in-flight", nil), del("down", nil), del("", nil), del("bad key", nil),
		// A DELETE's body and Content-Type are not read: no 413 nor 415.
		{"DELETE", "/v1/customers/c_1", erase, "created", "k-acme", strings.Repeat("x", 2<<10), map[string]string{"Content-Type": "text/plain"}},
		{"DELETE", "/v1/customers/" + long, erase, "k", "k-acme", "", nil},
		{"DELETE", "/v1/customers/c_1", erase, "k", "", "", nil},
		{"DELETE", "/v1/customers/c_1", erase, "k", "k-nobody", "", nil},
		{"DELETE", "/v1/customers/c_1", erase, "k", "k-busy", "", nil},
		{"DELETE", "/v1/customers/c_1", erase, "k", "k-spent", "", nil},
		post("created", nil), post("created", map[string]string{"Prefer": "wait=5"}), post("replayed", nil),
		post("mismatch", nil), post("in-flight", nil), post("down", nil), post("", nil), post("bad key", nil),
		{"POST", start, start, "k", "k-acme", `{"customer_id":""}`, nil},
		{"POST", start, start, "k", "k-acme", strings.Repeat("x", 2<<10), nil},
		{"POST", start, start, "k", "k-acme", `{"customer_id":"c_1"}`, map[string]string{"Content-Type": "text/plain"}},
		{"POST", start, start, "k", "", `{"customer_id":"c_1"}`, nil},
		{"POST", start, start, "k", "k-spent", `{"customer_id":"c_1"}`, nil},
		{"GET", "/v1/erasures/era_1", read, "", "k-acme", "", nil},
		{"GET", "/v1/erasures/era_missing", read, "", "k-acme", "", nil},
		{"GET", "/v1/erasures/" + long, read, "", "k-acme", "", nil},
		{"GET", "/v1/erasures/era_down", read, "", "k-acme", "", nil},
		{"GET", "/v1/erasures/era_1", read, "", "k-spent", "", nil},
		{"GET", "/v1/erasures/era_1", read, "", "", "", nil},
		{"GET", "/v1/customers/c_1", "", "", "k-acme", "", nil},
	}
}

// submitted remembers what each Submit started.
type submitted struct{ started []string }

func (s *submitted) Submit(_ context.Context, k ingress.Kind, tenant, key string, req ingress.Request, _ time.Duration) intake.Result {
	r, _ := req.(erasureRequest)
	s.started = append(s.started, k.Name()+":"+tenant+":"+key+":"+r.CustomerID)
	return intake.Result{Kind: intake.Created, ID: "era_1", Status: http.StatusAccepted, Body: []byte(`{}`)}
}

// DELETE /v1/customers/{id} starts the kind's request of the path's ID, whatever
// body the client sent, under the client's key, and says where to read it.
func TestDeletingACustomerStartsItsErasure(t *testing.T) {
	keyed := &submitted{}
	srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Keys: keysByName{}, MaxBodyBytes: 1 << 10, Keyed: keyed, Kinds: []KindRoute{erasureRoute()}}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v1/customers/c_1", strings.NewReader(`{"customer_id":"c_2"}`))
	req.Header.Set("Authorization", "Bearer k-acme")
	req.Header.Set("Idempotency-Key", "k1")
	req.Header.Set("Content-Type", "text/plain")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Location") != "/v1/erasures/era_1" {
		t.Errorf("DELETE answered %d, Location %q; want 202, /v1/erasures/era_1", resp.StatusCode, resp.Header.Get("Location"))
	}
	if len(keyed.started) != 1 || keyed.started[0] != "erasure:acme:k1:c_1" {
		t.Errorf("started %q, want the erasure of c_1 once, under k1", keyed.started)
	}
}
