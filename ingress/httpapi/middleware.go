package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderflow/orderflow/tenants/apikeys"
)

type metrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	replays       prometheus.Counter
	conflicts     *prometheus.CounterVec
	startDuration prometheus.Histogram
	quotaRefused  *prometheus.CounterVec
	quotaUnread   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderflow_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "orderflow_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
		replays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_idempotency_replays_total", Help: "Responses replayed for a repeated Idempotency-Key.",
		}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderflow_idempotency_conflicts_total", Help: "Repeated keys refused: mismatch (422) or in_flight (409).",
		}, []string{"kind"}),
		startDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "orderflow_workflow_start_duration_seconds", Help: "Latency of workflow starts from the API.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		// By tenant: only authenticated tenants reach the budget, so the label is
		// bounded by the tenants there are.
		quotaRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderflow_quota_refused_total", Help: "Requests refused with 429 because their tenant's budget was spent, by tenant.",
		}, []string{"tenant"}),
		quotaUnread: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_quota_unread_total", Help: "Requests let through because the fleet's budgets could not be read from the database.",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.replays, m.conflicts, m.startDuration, m.quotaRefused, m.quotaUnread)
	return m
}

// requestIDHeader is the header of every response that names the request, as
// Stripe's Request-Id does: quote it to support, find it in the logs and traces.
const requestIDHeader = "Request-Id"

// requestID gives each request an ID of its own (never one the client sent: a
// caller could forge or flood them), puts it in the response's Request-Id, the
// request's context (the access log's request_id) and its span.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		id := "req_" + hex.EncodeToString(b)
		w.Header().Set(requestIDHeader, id)
		trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("orderflow.request_id", id))
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), middleware.RequestIDKey, id)))
	})
}

// observe logs every request (never its headers or body: they carry keys and card
// tokens) and counts it by route pattern, not raw path, to bound label cardinality.
func observe(logger *slog.Logger, m *metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			began := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, &tenantSlot{}))
			next.ServeHTTP(ww, r)
			route := chi.RouteContext(r.Context()).RoutePattern()
			if route == "" {
				route = "unmatched"
			}
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			took := time.Since(began)
			method := methodLabel(r.Method)
			trace.SpanFromContext(r.Context()).SetName(method + " " + route)
			m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
			m.duration.WithLabelValues(route, method).Observe(took.Seconds())
			logger.LogAttrs(r.Context(), slog.LevelInfo, "http request",
				slog.String("request_id", middleware.GetReqID(r.Context())),
				slog.String("method", r.Method),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Int("bytes", ww.BytesWritten()),
				slog.Duration("took", took),
				slog.String("tenant", tenantOf(r.Context())),
			)
		})
	}
}

// methodLabel is a request's method as a label: one HTTP defines, or "other", so
// made-up methods (anyone can send one, before authentication) cannot grow the
// series or the span names.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// recoverer turns a panic into a 500 problem and a log line with the request ID.
func recoverer(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler { //nolint:errorlint // a panic value, compared as net/http compares it
						panic(v)
					}
					logger.ErrorContext(r.Context(), "panic", "request_id", middleware.GetReqID(r.Context()), "panic", v)
					writeProblem(w, r, newProblem(kindInternal, ""))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

type tenantKey struct{}

// tenantSlot carries the authenticated tenant back up to the access log, which
// wraps the handler and so never sees the context authenticate derives.
type tenantSlot struct{ name string }

func tenantOf(ctx context.Context) string {
	if s, ok := ctx.Value(tenantKey{}).(*tenantSlot); ok {
		return s.name
	}
	return ""
}

// authenticate resolves `Authorization: Bearer <key>` to the key's tenant.
func authenticate(keys KeyStore, proxies Proxies, logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="orderflow"`)
				writeProblem(w, r, newProblem(kindUnauthorized, "send Authorization: Bearer <api key>"))
				return
			}
			tenant, err := keys.Tenant(apikeys.WithClient(r.Context(), proxies.ClientAddr(r)), strings.TrimSpace(token))
			if err != nil {
				if !errors.Is(err, apikeys.ErrUnauthorized) {
					if !errors.Is(err, apikeys.ErrBusy) { // a flood of made-up keys is not an error of ours
						logger.ErrorContext(r.Context(), "api key lookup failed", "err", err)
					}
					writeProblem(w, r, withRetry(newProblem(kindUnavailable, "cannot check the API key now"), 1))
					return
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="orderflow", error="invalid_token"`)
				writeProblem(w, r, newProblem(kindUnauthorized, "the API key is not valid"))
				return
			}
			if slot, ok := r.Context().Value(tenantKey{}).(*tenantSlot); ok {
				slot.name = tenant
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, &tenantSlot{name: tenant})))
		})
	}
}

// limit spends one request of the tenant's budget, or refuses it with 429 before
// anything is read or started: its Idempotency-Key stays unclaimed, usable on a
// retry. Every answer carries the budget's state in the RateLimit-Policy and
// RateLimit fields (draft-ietf-httpapi-ratelimit-headers).
//
// Replays and GETs spend the budget too: a retry storm is made of replays, and
// a stream of them without end is a flood like any other, so the budget is
// their cap. They stay near free: the budget is spent from the process's lease
// (quota.Limiter), a token in memory, not a statement per request.
func limit(q Quota, m *metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, err := q.Allow(r.Context(), tenantOf(r.Context()))
			if err != nil {
				m.quotaUnread.Inc() // the request goes on: without its database it fails on its own
			}
			h := w.Header()
			h.Set("RateLimit-Policy", fmt.Sprintf(`"tenant";q=%d;w=%d`, d.Quota, max(d.Window, 1)))
			h.Set("RateLimit", fmt.Sprintf(`"tenant";r=%d;t=%d`, d.Remaining, d.Reset))
			if !d.Allowed {
				m.quotaRefused.WithLabelValues(tenantOf(r.Context())).Inc()
				writeProblem(w, r, withRetry(newProblem(kindQuotaExceeded, "this tenant's request budget is spent; retry after Retry-After seconds with the same Idempotency-Key"), d.RetryAfter))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func withRetry(p problem, seconds int) problem {
	p.retryAfter = max(seconds, 1)
	return p
}
