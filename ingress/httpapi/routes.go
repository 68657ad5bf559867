// Package httpapi is orderflow's HTTP API: authenticated, tenant-scoped order routes
// whose POST turns an Idempotency-Key into exactly one workflow.
package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/internal/telemetry"
)

// Deps are what the API needs.
type Deps struct {
	Logger   *slog.Logger
	Registry *prometheus.Registry
	Ready    *telemetry.Readiness
}

// NewServer returns the API's handler.
func NewServer(d Deps) http.Handler {
	r := chi.NewRouter()
	telemetry.Mount(r, d.Registry, d.Ready)
	return r
}
