package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
)

// KindRoute serves a kind added beside orders and refunds (a team's) at its own
// path: POST /v1/{Path} starts one of its workflows with an Idempotency-Key, with
// everything a POST of an order gets (the key's replay, 422 and 409, Prefer:
// wait, the tenant's budget, shedding); GET /v1/{Path}/{id} reads one.
type KindRoute struct {
	// Path is the kind's segment under /v1: lower-case letters, not one of
	// orderflow's own (orders, refunds).
	Path string
	Kind ingress.Kind
	// Get reads one of the tenant's workflows of the kind by its public ID;
	// intake.ErrNotFound when the tenant has none.
	Get func(ctx context.Context, tenant, id string) (ingress.View, error)
	// Deletes, when set, mounts DELETE /v1/{Deletes}/{id}: a request of the kind
	// whose member DeleteField is {id}, with everything a POST gets.
	Deletes, DeleteField string
}

// Keyed starts a workflow of any kind with an Idempotency-Key (*intake.Requests).
type Keyed interface {
	Submit(ctx context.Context, k ingress.Kind, tenant, key string, req ingress.Request, wait time.Duration) intake.Result
}

// CheckPath says why path cannot be a kind's route ("" when it can).
func CheckPath(path string) string {
	if path == "" || len(path) > 32 {
		return "must be 1-32 lower-case letters"
	}
	for _, c := range path {
		if c < 'a' || c > 'z' {
			return "must be 1-32 lower-case letters"
		}
	}
	if path == "orders" || path == "refunds" || path == "customers" {
		return "is orderflow's own"
	}
	return ""
}

// CheckKinds says why d's kinds cannot be served: a route that is not a
// lower-case word, taken twice or orderflow's own, a kind without a reader, or
// kinds without the keyed intake.
func CheckKinds(d Deps) error {
	seen := map[string]bool{}
	for _, k := range d.Kinds {
		msg := CheckPath(k.Path)
		switch {
		case msg != "":
		case seen[k.Path]:
			msg = "is taken twice"
		case k.Kind == nil || k.Get == nil || d.Keyed == nil:
			msg = "needs its kind, its reader and the keyed intake"
		}
		if msg != "" {
			return fmt.Errorf("the route /v1/%s: %s", k.Path, msg)
		}
		seen[k.Path] = true
	}
	return nil
}

// kindRoutes mounts each kind's routes: those that start work on sh's router
// for the kind (shedding), the others on r.
func (a *api) kindRoutes(r chi.Router, sh func(kind string) chi.Router, kinds []KindRoute) {
	for _, k := range kinds {
		sh(k.Kind.Name()).Post("/"+k.Path, func(w http.ResponseWriter, req *http.Request) {
			submit := func(ctx context.Context, tenant, key string, in ingress.Request, wait time.Duration) intake.Result {
				return a.Keyed.Submit(ctx, k.Kind, tenant, key, in, wait)
			}
			a.keyed(w, req, "/v1/"+k.Path+"/", func(body []byte) (ingress.Request, error) { return k.Kind.Decode(body) }, submit)
		})
		r.Get("/"+k.Path+"/{id}", func(w http.ResponseWriter, req *http.Request) { a.getKind(w, req, k) })
		if k.Deletes != "" {
			sh(k.Kind.Name()).Delete("/"+k.Deletes+"/{id}", func(w http.ResponseWriter, req *http.Request) { a.deleteKind(w, req, k) })
		}
	}
}

// deleteKind starts k's request for DELETE /v1/{Deletes}/{id}: the body is
// {"DeleteField": id}, whatever the client sent.
func (a *api) deleteKind(w http.ResponseWriter, r *http.Request, k KindRoute) {
	// The ID is checked as every path's is (400 invalid-path), before it makes
	// the body: a long one would otherwise answer 413 to a request without one.
	id, p := pathID(r)
	if p != nil {
		writeProblem(w, r, *p)
		return
	}
	body, _ := json.Marshal(map[string]string{k.DeleteField: id}) // a map of strings always encodes
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Type", "application/json")
	submit := func(ctx context.Context, tenant, key string, in ingress.Request, wait time.Duration) intake.Result {
		return a.Keyed.Submit(ctx, k.Kind, tenant, key, in, wait)
	}
	a.keyed(w, r, "/v1/"+k.Path+"/", func(body []byte) (ingress.Request, error) { return k.Kind.Decode(body) }, submit)
}

func (a *api) getKind(w http.ResponseWriter, r *http.Request, k KindRoute) {
	id, p := pathID(r)
	if p != nil {
		writeProblem(w, r, *p)
		return
	}
	v, err := k.Get(r.Context(), tenantOf(r.Context()), id)
	if err == nil && a.Personal != nil {
		v.Body, err = a.Personal.ShownIn(r.Context(), tenantOf(r.Context()), v.Body)
	}
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, v.Body)
	case errors.Is(err, intake.ErrNotFound):
		writeProblem(w, r, newProblem(kindNotFound, "no such "+k.Kind.Name()))
	default:
		a.unavailable(w, r, err)
	}
}
