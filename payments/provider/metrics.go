package provider

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// Metered counts and times every request to the provider by operation and
// outcome (orderflow_provider_requests_total, orderflow_provider_request_duration_seconds),
// for the provider's error-ratio and latency alerts. Labels come from a fixed
// list: nothing a caller or the provider chooses becomes one.
func Metered(next http.RoundTripper, reg prometheus.Registerer) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	m := &metered{next: next,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderflow_provider_requests_total",
			Help: "Requests to the payment provider by operation and outcome (ok, declined, conflict, refused, unauthorized, rate_limited, server_error, network).",
		}, []string{"operation", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "orderflow_provider_request_duration_seconds",
			Help:    "Latency of requests to the payment provider by operation.",
			Buckets: []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80},
		}, []string{"operation"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

type metered struct {
	next     http.RoundTripper
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func (m *metered) RoundTrip(r *http.Request) (*http.Response, error) {
	op := operation(r.Method, r.URL.Path)
	began := time.Now()
	resp, err := m.next.RoundTrip(r)
	m.duration.WithLabelValues(op).Observe(time.Since(began).Seconds())
	m.requests.WithLabelValues(op, outcome(resp, err)).Inc()
	return resp, err
}

// operation names a request of the provider's API orderflow makes.
func operation(method, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 2 || parts[0] != "v1" {
		return "other"
	}
	switch {
	case parts[1] == "payment_intents" && len(parts) == 2 && method == http.MethodPost:
		return "create_intent"
	case parts[1] == "payment_intents" && len(parts) == 3 && parts[2] == "search":
		return "search_intents"
	case parts[1] == "payment_intents" && len(parts) == 3 && method == http.MethodGet:
		return "retrieve_intent"
	case parts[1] == "payment_intents" && len(parts) == 4 && (parts[3] == "confirm" || parts[3] == "cancel"):
		return parts[3] + "_intent"
	case parts[1] == "refunds" && len(parts) == 2 && method == http.MethodPost:
		return "refund"
	case parts[1] == "refunds" && len(parts) == 2:
		return "list_refunds"
	case parts[1] == "charges" && len(parts) == 2 && method == http.MethodPost:
		return "charge"
	case parts[1] == "charges":
		return "list_charges"
	}
	return "other"
}

func outcome(resp *http.Response, err error) string {
	if err != nil {
		return "network"
	}
	switch s := resp.StatusCode; {
	case s < 300:
		return "ok"
	case s == http.StatusPaymentRequired:
		return "declined"
	case s == http.StatusConflict:
		return "conflict"
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return "unauthorized"
	case s == http.StatusTooManyRequests:
		return "rate_limited"
	case s >= 500:
		return "server_error"
	case s >= 400:
		return "refused"
	}
	return "other"
}

// Paced sends at most perSecond requests a second through next, waiting for its
// turn (or the request's context): for a caller whose requests must leave the
// account's rate limit to the payments.
func Paced(next http.RoundTripper, perSecond float64) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &paced{next: next, limit: rate.NewLimiter(rate.Limit(perSecond), 1)}
}

type paced struct {
	next  http.RoundTripper
	limit *rate.Limiter
}

func (p *paced) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := p.limit.Wait(r.Context()); err != nil {
		return nil, err
	}
	return p.next.RoundTrip(r)
}
