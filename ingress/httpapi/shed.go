package httpapi

import (
	"context"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/platform/identity"
)

// ShedLimits bound what one API process takes on at once. Above a bound a POST
// is refused before any work starts (503 with Retry-After): no key claimed, no
// workflow started, so nothing admitted ends in a timeout.
type ShedLimits struct {
	// Posts are the POSTs in flight that answer without waiting (0: no bound).
	Posts int
	// Waiters are the POSTs in flight that wait for their outcome, Prefer: wait
	// (0: no bound).
	Waiters int
	// Backlog bounds the work the whole fleet has open (*backlog.Gauge; nil:
	// no bound): above it every POST and DELETE is refused the same way.
	Backlog Backlog
	// Held tells whether a key has a live record (*idempotency.Store): a POST
	// with it over the backlog is a retry of work admitted before, answered
	// from its record, and passes (nil: it is refused like any other).
	Held HeldKeys
}

// HeldKeys reads whether a tenant's key (stored as identity.StoredKey names
// it) has a record that has not expired.
type HeldKeys interface {
	Holds(ctx context.Context, tenant, storedKey string) (bool, error)
}

// Backlog admits a tenant's new work while the fleet's backlog is under its
// bound or the tenant's under its share, and otherwise says in how many seconds
// it will be.
type Backlog interface {
	Admit(tenant string) (retryAfter int, ok bool)
}

// Retry-After is never under a second nor over the longest Prefer: wait.
const (
	minShedRetry = 1
	maxShedRetry = 30
)

// gate counts the requests of one bound in flight and how fast they leave.
type gate struct {
	max      int64
	inFlight atomic.Int64
	done     atomic.Int64
	mu       sync.Mutex
	sampled  time.Time
	seen     int64
	rate     float64 // requests finished a second, smoothed over samples
}

// enter takes a place, or says false (and takes none) when the gate is full.
func (g *gate) enter() bool {
	if g.max <= 0 {
		return true
	}
	if g.inFlight.Add(1) > g.max {
		g.inFlight.Add(-1)
		return false
	}
	return true
}

// cancel gives back a place taken for a request refused after all.
func (g *gate) cancel() {
	if g.max > 0 {
		g.inFlight.Add(-1)
	}
}

func (g *gate) leave() {
	if g.max <= 0 {
		return
	}
	g.inFlight.Add(-1)
	g.done.Add(1)
	g.sample(time.Now())
}

// sample folds the requests finished since the last sample into the rate, at
// most once a second, so one request's timing never swings it.
func (g *gate) sample(now time.Time) float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sampled.IsZero() {
		g.sampled, g.seen = now, g.done.Load()
		return g.rate
	}
	took := now.Sub(g.sampled).Seconds()
	if took < 1 {
		return g.rate
	}
	done := g.done.Load()
	measured := float64(done-g.seen) / took
	if g.rate == 0 {
		g.rate = measured
	} else {
		g.rate = 0.5*g.rate + 0.5*measured
	}
	g.sampled, g.seen = now, done
	return g.rate
}

// retryAfter is the seconds the gate takes to drain what is in it at the rate
// measured: by then a place is free for the refused request and those refused
// with it. Unmeasured yet: the shortest.
func (g *gate) retryAfter(now time.Time) int {
	rate := g.sample(now)
	if rate <= 0 {
		return minShedRetry
	}
	s := int(math.Ceil(float64(g.inFlight.Load()) / rate))
	return min(max(s, minShedRetry), maxShedRetry)
}

// shed refuses the POSTs above l's bounds with 503 and a Retry-After from the
// rate the admitted ones finish at (the fleet's backlog: the rate the fleet
// closes work at); other methods pass. It runs after the tenant's budget, so a
// tenant over its own budget still hears 429. It returns the middleware of a
// route of kind ("" for a route that starts no keyed work): over the fleet's
// backlog a retry of a key of kind already held passes, since its answer is
// the record's, not new work.
func shed(l ShedLimits, reg prometheus.Registerer) func(kind string) func(http.Handler) http.Handler {
	posts, waiters := &gate{max: int64(l.Posts)}, &gate{max: int64(l.Waiters)}
	shed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "orderflow_http_shed_total", Help: "POSTs and DELETEs refused with 503 before any work, by bound: this process's (posts, waiters) or the fleet's backlog (backlog).",
	}, []string{"bound"})
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "orderflow_http_posts_in_flight", Help: "POSTs in flight under the shedding bounds, waiters included.",
	}, func() float64 { return float64(posts.inFlight.Load() + waiters.inFlight.Load()) })
	reg.MustRegister(shed, inFlight)
	return func(kind string) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost && r.Method != http.MethodDelete { // a DELETE starts a workflow too
					next.ServeHTTP(w, r)
					return
				}
				g, bound := posts, "posts"
				if parsePreferWait(r.Header.Values("Prefer")) > 0 {
					g, bound = waiters, "waiters"
				}
				if !g.enter() {
					shed.WithLabelValues(bound).Inc()
					p := newProblem(kindUnavailable, "this API process is at capacity and started nothing for this request; retry after Retry-After seconds with the same Idempotency-Key")
					p.retryAfter = g.retryAfter(time.Now())
					writeProblem(w, r, p)
					return
				}
				if after, ok := l.admit(r, kind); !ok {
					g.cancel()
					shed.WithLabelValues("backlog").Inc()
					p := newProblem(kindUnavailable, "the fleet has more work open than it finishes in the time it accepts, and nothing was started for this request; retry after Retry-After seconds with the same Idempotency-Key")
					p.retryAfter = after
					writeProblem(w, r, p)
					return
				}
				defer g.leave()
				next.ServeHTTP(w, r)
			})
		}
	}
}

// admit asks the fleet's backlog for r's tenant; over it, a request whose key
// of kind is held passes. A key that cannot be read is refused with the rest.
func (l ShedLimits) admit(r *http.Request, kind string) (retryAfter int, ok bool) {
	if l.Backlog == nil {
		return 0, true
	}
	tenant := tenantOf(r.Context())
	after, ok := l.Backlog.Admit(tenant)
	if ok || kind == "" || l.Held == nil {
		return after, ok
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" || len(key) > identity.MaxKeyLen {
		return after, false
	}
	held, err := l.Held.Holds(r.Context(), tenant, identity.StoredKey(kind, key))
	if err != nil || !held {
		return after, false
	}
	return 0, true
}
