package httpapi

import (
	"context"
	"encoding/json"
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
)

// thing is a kind a team adds: a request with one field.
type thing struct{ ingress.Kind }

type thingRequest struct{ Name string }

func (r thingRequest) Fingerprint() []byte     { return []byte(r.Name) }
func (r thingRequest) Same(stored []byte) bool { return string(stored) == r.Name }

func (thing) Name() string { return "thing" }
func (thing) Decode(payload json.RawMessage) (ingress.Request, error) {
	var r thingRequest
	if err := ingress.DecodeStrict(payload, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// keyedThings starts each key's thing once and remembers what it started.
type keyedThings struct{ started map[string]string }

func (k *keyedThings) Submit(_ context.Context, kind ingress.Kind, tenant, key string, req ingress.Request, _ time.Duration) intake.Result {
	if _, ok := k.started[key]; ok {
		return intake.Result{Kind: intake.Replayed, ID: "thg_" + key, Status: 202, Body: []byte(`{"id":"thg_` + key + `"}`)}
	}
	k.started[key] = kind.Name() + ":" + tenant + ":" + req.(thingRequest).Name
	return intake.Result{Kind: intake.Created, ID: "thg_" + key, Status: 202, Body: []byte(`{"id":"thg_` + key + `"}`)}
}

// A kind added beside orders gets its own POST, with the key's replay, and GET
// by ID; a route that is orderflow's own, taken twice or not a word is refused.
func TestAKindsRoutesStartItWithAKeyAndReadIt(t *testing.T) {
	keyed := &keyedThings{started: map[string]string{}}
	get := func(_ context.Context, tenant, id string) (ingress.View, error) {
		if id != "thg_k1" || tenant != "acme" {
			return ingress.View{}, intake.ErrNotFound
		}
		return ingress.View{ID: id, Body: []byte(`{"id":"thg_k1","status":"DONE"}`)}, nil
	}
	d := Deps{Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Keys: acceptAll{}, MaxBodyBytes: 1 << 10,
		Keyed: keyed, Kinds: []KindRoute{{Path: "things", Kind: thing{}, Get: get}}}
	if err := CheckKinds(d); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(d))
	defer srv.Close()
	send := func(method, path, key, body string) (int, http.Header, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	if code, h, _ := send(http.MethodPost, "/v1/things", "k1", `{"Name":"a"}`); code != 202 || h.Get("Location") != "/v1/things/thg_k1" {
		t.Fatalf("POST: %d, Location %q", code, h.Get("Location"))
	}
	if code, h, _ := send(http.MethodPost, "/v1/things", "k1", `{"Name":"a"}`); code != 202 || h.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("POST again: %d, replayed %q", code, h.Get("Idempotent-Replayed"))
	}
	if code, _, body := send(http.MethodPost, "/v1/things", "k2", `{"Name":"a","extra":1}`); code != 400 || !strings.Contains(body, "extra") {
		t.Fatalf("POST with an unknown field: %d %s", code, body)
	}
	if code, _, _ := send(http.MethodPost, "/v1/things", "", `{"Name":"a"}`); code != 400 {
		t.Fatalf("POST without a key: %d", code)
	}
	if code, _, body := send(http.MethodGet, "/v1/things/thg_k1", "", ""); code != 200 || !strings.Contains(body, "DONE") {
		t.Fatalf("GET: %d %s", code, body)
	}
	if code, _, _ := send(http.MethodGet, "/v1/things/thg_none", "", ""); code != 404 {
		t.Fatalf("GET of no such thing: %d", code)
	}
	if len(keyed.started) != 1 || keyed.started["k1"] != "thing:acme:a" {
		t.Fatalf("started %v, want k1's thing once", keyed.started)
	}
	for _, bad := range [][]KindRoute{
		{{Path: "orders", Kind: thing{}, Get: get}},
		{{Path: "things", Kind: thing{}, Get: get}, {Path: "things", Kind: thing{}, Get: get}},
		{{Path: "Things", Kind: thing{}, Get: get}},
		{{Path: "things", Kind: thing{}}},
	} {
		if err := CheckKinds(Deps{Keyed: keyed, Kinds: bad}); err == nil {
			t.Errorf("kinds %v were accepted", bad)
		}
	}
}
