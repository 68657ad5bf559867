// Package httpapi is orderflow's HTTP API: authenticated, tenant-scoped order routes
// whose POST turns an Idempotency-Key into exactly one workflow.
package httpapi

import (
	"context"
	_ "embed"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/quota"
)

//go:embed openapi.yaml
var openapiSpec []byte

// KeyStore resolves API keys to tenants.
type KeyStore interface {
	Tenant(ctx context.Context, key string) (string, error)
}

// Quota is each tenant's request budget (*quota.Limiter).
type Quota interface {
	Allow(ctx context.Context, tenant string) (quota.Decision, error)
}

// Intake places, reads and cancels orders (*orders.Service): the order routes
// reach the order kind only through it.
type Intake interface {
	// Decode reads and validates an order's POST body; every error is a
	// *ingress.FieldError.
	Decode(body []byte) (intake.Request, error)
	Place(ctx context.Context, tenant, key string, req intake.Request, wait time.Duration) intake.Result
	Get(ctx context.Context, tenant, orderID string) (wire.Order, error)
	List(ctx context.Context, tenant string, f intake.Filter) ([]wire.Order, string, error)
	Cancel(ctx context.Context, tenant, orderID string) (wire.Order, error)
}

var (
	_ KeyStore = (*apikeys.Store)(nil)
	_ Quota    = (*quota.Limiter)(nil)
)

// Deps are what the API needs.
type Deps struct {
	Logger   *slog.Logger
	Registry *prometheus.Registry
	Keys     KeyStore
	// Proxies are the proxies whose X-Forwarded-For or Forwarded names the
	// client (TRUSTED_PROXIES): each client address has its own bound on
	// unknown API keys (apikeys.WithClient).
	Proxies Proxies
	Intake  Intake
	// Quota refuses a tenant's requests over its budget (nil: no budget).
	Quota Quota
	// Shed bounds the POSTs this process takes on at once (zero: no bound).
	Shed         ShedLimits
	MaxBodyBytes int64
	// Tracing makes a server span of each request (nil: none).
	Tracing *tracing.Tracing
	// ProblemBase prefixes each problem's kind to make its type URL, where the
	// kind is documented (docs/problems/); empty: DefaultProblemBase.
	ProblemBase string
	// Refunds serves the refunds of orders (nil: no refund routes).
	Refunds Refunds
	// Webhooks serves the payment provider's webhooks at /webhooks/stripe, outside
	// /v1's API keys: it checks the provider's signature itself (nil: no route).
	Webhooks http.Handler
	// Kinds are the kinds added beside orders and refunds, each at its route,
	// started through Keyed.
	Kinds []KindRoute
	Keyed Keyed
	// Personal opens the personal values an answer holds sealed (a stored
	// answer keeps them sealed under their customer's key) for the client it
	// goes to: "[erased]" once the customer was erased (nil: answers as stored).
	Personal Personal
}

// Personal opens the sealed values in a JSON answer of a tenant's
// (*custkeys.Store).
type Personal interface {
	ShownIn(ctx context.Context, tenant string, body []byte) ([]byte, error)
}

// NewServer returns the API's handler; d's kinds have passed CheckKinds.
func NewServer(d Deps) http.Handler {
	m := newMetrics(d.Registry)
	a := &api{Deps: d, m: m}
	r := chi.NewRouter()
	r.Use(requestID, problemTypes(d.ProblemBase), observe(d.Logger, m), recoverer(d.Logger))
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		writeProblem(w, req, newProblem(kindNotFound, "no such route"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeProblem(w, req, newProblem(kindMethodNotAllowed, req.Method+" is not allowed here; Allow lists what is"))
	})
	r.Get("/openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(openapiSpec)
	})
	if d.Webhooks != nil {
		r.Post("/webhooks/stripe", d.Webhooks.ServeHTTP)
	}
	r.Route("/v1", func(r chi.Router) {
		r.Use(authenticate(d.Keys, d.Proxies, d.Logger))
		if d.Quota != nil {
			r.Use(limit(d.Quota, m))
		}
		// Shedding wraps the routes that start work, so a POST to no route still
		// hears 404 or 405.
		shedAs := shed(d.Shed, d.Registry)
		sh := func(kind string) chi.Router { return r.With(shedAs(kind)) }
		sh(order.Kind).Post("/orders", a.createOrder)
		r.Get("/orders", a.listOrders)
		r.Get("/orders/{id}", a.getOrder)
		sh("").Post("/orders/{id}/cancel", a.cancelOrder)
		if d.Refunds != nil {
			sh(refund.Kind).Post("/orders/{id}/refunds", a.createRefund)
			r.Get("/orders/{id}/refunds", a.listRefunds)
			r.Get("/refunds/{id}", a.getRefund)
		}
		a.kindRoutes(r, sh, d.Kinds)
	})
	if d.Tracing == nil {
		return r
	}
	return d.Tracing.Handler(r, "orderflow.api")
}
