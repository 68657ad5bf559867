// Package telemetry provides the logger, the Prometheus registry and the operational
// endpoints (/healthz, /readyz, /metrics) shared by the binaries.
package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// NewLogger returns a JSON logger at the given level ("debug", "info", "warn", "error").
// A line logged with a context inside a trace carries its trace_id and span_id.
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(traceHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})})
}

// traceHandler adds the trace of the record's context.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}

// NewRegistry returns a registry with the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Check reports whether a dependency can serve; nil means ready.
type Check func(ctx context.Context) error

// Readiness answers /readyz: not ready while draining or while a gating check
// fails. Every check shows in /readyz's body and in orderflow_ready_check.
type Readiness struct {
	draining atomic.Bool
	mu       sync.Mutex
	names    []string
	checks   []Check
	gating   map[string]bool
}

// Add registers a named check that gates readiness.
func (r *Readiness) Add(name string, c Check) { r.add(name, c, true) }

// Report registers a named check that is shown but never takes the process out
// of rotation: the API answers 503 with Retry-After by itself while Postgres or
// Temporal is away, which a client can act on, unlike a Service with no endpoints.
func (r *Readiness) Report(name string, c Check) { r.add(name, c, false) }

// Gate makes reported checks gate readiness.
func (r *Readiness) Gate(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		r.gating[n] = true
	}
}

func (r *Readiness) add(name string, c Check, gating bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gating == nil {
		r.gating = map[string]bool{}
	}
	r.names = append(r.names, name)
	r.checks = append(r.checks, c)
	r.gating[name] = gating
}

// Drain turns readiness off for good: the first step of every shutdown.
func (r *Readiness) Drain() { r.draining.Store(true) }

// Collector exports readiness at each scrape: orderflow_ready (1 or 0) and
// orderflow_ready_check{check} for each named check, so an alert can name what
// keeps a process out of rotation.
func (r *Readiness) Collector() prometheus.Collector {
	return readyCollector{r: r,
		ready: prometheus.NewDesc("orderflow_ready", "1 when /readyz answers 200.", nil, nil),
		check: prometheus.NewDesc("orderflow_ready_check", "1 when the named readiness check passes.", []string{"check"}, nil),
	}
}

type readyCollector struct {
	r            *Readiness
	ready, check *prometheus.Desc
}

func (c readyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.ready; ch <- c.check }

func (c readyCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ReadyBudget)
	defer cancel()
	ok, failures := c.r.Status(ctx)
	ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, b2f(ok))
	c.r.mu.Lock()
	names := c.r.names
	c.r.mu.Unlock()
	for _, n := range names {
		_, failed := failures[n]
		ch <- prometheus.MustNewConstMetric(c.check, prometheus.GaugeValue, b2f(!failed), n)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Status runs every check and returns the failures by name; ready is false
// while draining or while a gating check fails.
func (r *Readiness) Status(ctx context.Context) (ready bool, failures map[string]string) {
	failures = map[string]string{}
	ready = !r.draining.Load()
	if !ready {
		failures["process"] = "draining"
	}
	r.mu.Lock()
	names, checks, gating := r.names, r.checks, maps.Clone(r.gating)
	r.mu.Unlock()
	for i, c := range checks {
		if err := c(ctx); err != nil {
			failures[names[i]] = err.Error()
			ready = ready && !gating[names[i]]
		}
	}
	return ready, failures
}

// ReadyBudget is how long /readyz gives its checks: a readiness probe must wait
// longer.
const ReadyBudget = 2 * time.Second

// Mount adds /healthz, /readyz and /metrics to mux.
func Mount(mux interface {
	Handle(pattern string, h http.Handler)
}, reg *prometheus.Registry, ready *Readiness) {
	mux.Handle("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	mux.Handle("/readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyBudget)
		defer cancel()
		ok, failures := ready.Status(ctx)
		switch {
		case !ok:
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "failures": failures})
		case len(failures) > 0:
			writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "degraded": failures})
		default:
			writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
		}
	}))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// SDKMetrics is a Temporal SDK metrics handler that exports into reg, so the SDK's
// own metrics (schedule-to-start latency, slots, poll errors, request failures)
// sit beside ours on /metrics: temporal_* names, durations in seconds.
func SDKMetrics(reg prometheus.Registerer, logger *slog.Logger) (client.MetricsHandler, error) {
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("temporal sdk metrics: %w", err)
	}
	seconds := sdkmetric.NewView(sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Unit: "s"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{
			Boundaries: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}})
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithView(seconds))
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                mp.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
		OnError:              func(err error) { logger.Warn("temporal sdk metric", "err", err) },
	}), nil
}

// Bounds of an ops listener (health, metrics, the codec): every caller reaches it
// before any credential is checked, so none may hold a connection or send a body
// longer than these.
const (
	opsReadTimeout  = 10 * time.Second
	opsWriteTimeout = 30 * time.Second // a large /metrics on a slow scraper
	opsIdleTimeout  = 60 * time.Second
	// MaxOpsBody caps a request body on an ops listener (the codec's payloads).
	MaxOpsBody = 4 << 20
)

// OpsServer is the HTTP server of an ops listener serving h, with its timeouts and
// body cap.
func OpsServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           http.MaxBytesHandler(h, MaxOpsBody),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       opsReadTimeout,
		WriteTimeout:      opsWriteTimeout,
		IdleTimeout:       opsIdleTimeout,
		MaxHeaderBytes:    16 << 10,
	}
}
