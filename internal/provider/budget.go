package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/orderflow/orderflow/internal/fleetrate"
)

type tenantKey struct{}

// WithTenant marks the requests made with ctx as the tenant's, for Budgeted.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

func tenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// Pace spaces the requests of a budget: the fleet's rate for the provider
// account, split between tenants by weight across the fleet (fleetrate.Shared),
// or one pace for everyone (Everyone).
type Pace interface {
	Wait(ctx context.Context, tenant string, weight float64) error
}

// Everyone is a pace that does not tell tenants apart: a rate.Limiter in the
// process, say.
func Everyone(p interface{ Wait(context.Context) error }) Pace { return everyone{p} }

type everyone struct {
	p interface{ Wait(context.Context) error }
}

func (e everyone) Wait(ctx context.Context, _ string, _ float64) error { return e.p.Wait(ctx) }

// Budgeted keeps the requests through it within pace, the provider account's
// rate limit (Stripe allows 100 a second live, 25 in test mode), so the
// provider seldom answers 429. The budget is shared fairly: when requests
// wait, the waiting tenants get the next turns in proportion to their weights
// (those without a tenant count as one tenant of weight 1), so one tenant's
// backlog of payments cannot make another's wait behind all of it. A request
// waits as long as its context lets it. A nil pace is no budget; a nil weight
// weighs every tenant 1.
func Budgeted(next http.RoundTripper, pace Pace, weight func(tenant string) float64) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if pace == nil {
		return next
	}
	if weight == nil {
		weight = func(string) float64 { return 1 }
	}
	return &budget{next: next, pace: pace, weight: weight, queues: map[string]*queue{}}
}

type budget struct {
	next   http.RoundTripper
	pace   Pace
	weight func(string) float64

	mu       sync.Mutex
	queues   map[string]*queue // the tenants with waiters
	clock    float64           // the pass of the last turn given
	dispatch bool              // a dispatcher hands out turns
}

// queue is a tenant's waiters, first come first, and its pass: the tenant with
// the lowest is served next, and each turn moves it on by 1/weight (stride
// scheduling), so turns follow the weights.
type queue struct {
	waiters []chan struct{}
	pass    float64
}

func (b *budget) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := b.acquire(r.Context(), tenantOf(r.Context())); err != nil {
		return nil, err
	}
	return b.next.RoundTrip(r)
}

// acquire waits for a turn handed to this request.
func (b *budget) acquire(ctx context.Context, tenant string) error {
	granted := make(chan struct{})
	b.mu.Lock()
	if !b.dispatch {
		b.dispatch = true
		go b.dispatcher()
	}
	q := b.queues[tenant]
	if q == nil {
		q = &queue{pass: b.clock} // a tenant that starts waiting saves up no turns
		b.queues[tenant] = q
	}
	q.waiters = append(q.waiters, granted)
	b.mu.Unlock()
	select {
	case <-granted:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		b.remove(tenant, granted)
		b.mu.Unlock()
		return ctx.Err()
	}
}

// paceRetry is the pause after the pace could not be read: nothing goes out
// without a turn of the budget.
const paceRetry = 500 * time.Millisecond

// dispatcher hands out the pace's turns while any request waits.
func (b *budget) dispatcher() {
	for {
		tenant, ok := b.upcoming()
		if !ok {
			return
		}
		if err := b.waitPace(tenant); err != nil {
			time.Sleep(paceRetry)
			continue
		}
		b.grant(tenant)
	}
}

// paceTimeout bounds one wait on the pace, so that a database that stops
// answering holds the turns for a while, not forever.
const paceTimeout = 10 * time.Second

func (b *budget) waitPace(tenant string) error {
	ctx, cancel := context.WithTimeout(context.Background(), paceTimeout)
	defer cancel()
	return b.pace.Wait(ctx, tenant, b.weight(tenant))
}

// upcoming is the tenant whose turn is next: the lowest pass among those
// waiting. With none waiting the dispatcher stops, and the next waiter starts
// another.
func (b *budget) upcoming() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tenant, q := "", (*queue)(nil)
	for t, c := range b.queues {
		if q == nil || c.pass < q.pass || (c.pass == q.pass && t < tenant) {
			tenant, q = t, c
		}
	}
	if q == nil {
		b.dispatch = false
	}
	return tenant, q != nil
}

// grant gives the turn the pace gave tenant to its first waiter; when all of
// them gave up meanwhile, the turn is spent.
func (b *budget) grant(tenant string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[tenant]
	if q == nil {
		return
	}
	b.clock = q.pass
	q.pass += 1 / max(b.weight(tenant), 1e-3)
	granted := q.waiters[0]
	b.remove(tenant, granted)
	close(granted)
}

// remove takes a waiter out of its tenant's queue, and the tenant out once it
// has none. The caller holds mu.
func (b *budget) remove(tenant string, granted chan struct{}) {
	q := b.queues[tenant]
	if q == nil {
		return
	}
	q.waiters = slices.DeleteFunc(q.waiters, func(g chan struct{}) bool { return g == granted })
	if len(q.waiters) == 0 {
		delete(b.queues, tenant)
	}
}

// AccountPace is the provider account's budget (c.Rate), held across the fleet
// in rates, one request at a time (Stripe counts requests a second), and split
// between the tenants waiting for it by weight, across the fleet too; nil for
// none. The budget is named by the provider's address: the API's restricted
// read key and the workers' key are one account, and one limit.
func AccountPace(rates *fleetrate.Rates, c Config) Pace {
	if c.Rate <= 0 {
		return nil
	}
	sum := sha256.Sum256([]byte(c.URL))
	return rates.Shared("provider:"+hex.EncodeToString(sum[:8]), fleetrate.Limit{Rate: float64(c.Rate), Burst: 1}, time.Second)
}
