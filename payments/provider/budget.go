package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/orderflow/orderflow/tenants/fleetrate"
)

type tenantKey struct{}

// WithTenant marks the requests made with ctx as the tenant's, for Budgeted.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantOf is the tenant whose requests ctx makes, "" for none.
func TenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// Webhooks is the budget's lane of the provider's webhooks, which serve every
// tenant: they wait as a tenant of their own (with its own weight), never
// behind one tenant's reads. No tenant has this name: tenants' names begin
// with a letter or a digit.
const Webhooks = "_webhooks"

// Pace spaces the requests of a budget: the fleet's rate for the provider
// account, split between tenants by weight across the fleet (fleetrate.Shared),
// or one pace for everyone (Everyone). A request takes a turn of its tenant's
// row (at its share), then one of the account's row (the whole).
type Pace interface {
	WaitTenant(ctx context.Context, tenant string, weight float64) error
	WaitAccount(ctx context.Context) error
}

// Everyone is a pace that does not tell tenants apart: a rate.Limiter in the
// process, say.
func Everyone(p interface{ Wait(context.Context) error }) Pace { return everyone{p} }

type everyone struct {
	p interface{ Wait(context.Context) error }
}

func (everyone) WaitTenant(context.Context, string, float64) error { return nil }

func (e everyone) WaitAccount(ctx context.Context) error { return e.p.Wait(ctx) }

// Budgeted keeps the requests through it within pace, the provider account's
// rate limit (Stripe allows 100 a second live, 25 in test mode), so the
// provider seldom answers 429. The budget is shared fairly: each waiting
// tenant's row is waited on by a goroutine of its own, side by side, so a
// tenant whose row is slow (its share used up across the fleet) holds up no
// other; the account's turns then go to the tenants whose rows gave them one,
// in proportion to their weights (those without a tenant count as one tenant
// of weight 1), so one tenant's backlog cannot make another's wait behind all
// of it. A request waits as long as its context lets it. A nil pace is no
// budget; a nil weight weighs every tenant 1.
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
	return &budget{next: next, pace: pace, weight: weight, queues: map[string]*queue{}, wake: make(chan struct{}, 1)}
}

type budget struct {
	next   http.RoundTripper
	pace   Pace
	weight func(string) float64
	wake   chan struct{} // a tenant's row gave a turn, or a tenant stopped waiting

	mu       sync.Mutex
	queues   map[string]*queue // the tenants with waiters
	clock    float64           // the pass of the last turn given
	dispatch bool              // a dispatcher hands out the account's turns
}

// queue is a tenant's waiters, first come first, and its pass: of the tenants
// whose rows gave them a turn, the one with the lowest is served next, and
// each turn moves it on by 1/weight (stride scheduling), so turns follow the
// weights.
type queue struct {
	waiters []chan struct{}
	pass    float64
	ready   int                // turns of the tenant's row taken, not yet given
	stop    context.CancelFunc // ends the wait on the tenant's row; nil while none runs
}

func (b *budget) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := b.acquire(r.Context(), TenantOf(r.Context())); err != nil {
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
		go b.dispatcher() //nolint:gosec // G118: it serves every waiter, not this request, and stops when none waits
	}
	q := b.queues[tenant]
	if q == nil {
		q = &queue{pass: b.clock} // a tenant that starts waiting saves up no turns
		b.queues[tenant] = q
	}
	q.waiters = append(q.waiters, granted)
	if q.stop == nil {
		var rowCtx context.Context
		rowCtx, q.stop = context.WithCancel(context.Background())
		go b.row(rowCtx, tenant, q)
	}
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

// paceTimeout bounds one wait on the pace, so that a database that stops
// answering holds the turns for a while, not forever.
const paceTimeout = 10 * time.Second

// row takes turns of the tenant's row while it has more waiters than turns,
// one at a time; it ends when they have all given up (ctx).
func (b *budget) row(ctx context.Context, tenant string, q *queue) {
	for {
		wctx, cancel := context.WithTimeout(ctx, paceTimeout)
		err := b.pace.WaitTenant(wctx, tenant, b.weight(tenant))
		cancel()
		b.mu.Lock()
		if b.queues[tenant] != q {
			b.mu.Unlock()
			return // its waiters gave up; the turn, if any, is spent
		}
		if err == nil {
			if q.ready == 0 {
				q.pass = max(q.pass, b.clock) // a tenant kept by its row saves up no turns
			}
			q.ready++
			b.signal()
		}
		if len(q.waiters) <= q.ready {
			q.stop()
			q.stop = nil
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		if err != nil {
			pause(ctx, paceRetry)
		}
	}
}

// dispatcher hands out the account's turns while any request waits, one at a
// time, each to the tenant served next of those with a turn of their row.
func (b *budget) dispatcher() {
	for b.awaitReady() {
		ctx, cancel := context.WithTimeout(context.Background(), paceTimeout)
		err := b.pace.WaitAccount(ctx)
		cancel()
		if err != nil {
			time.Sleep(paceRetry)
			continue
		}
		b.grant()
	}
}

// awaitReady waits until a tenant has a turn of its row; false, and the
// dispatcher stops, once no request waits (the next waiter starts another).
func (b *budget) awaitReady() bool {
	for {
		b.mu.Lock()
		if len(b.queues) == 0 {
			b.dispatch = false
			b.mu.Unlock()
			return false
		}
		for _, q := range b.queues {
			if q.ready > 0 {
				b.mu.Unlock()
				return true
			}
		}
		b.mu.Unlock()
		<-b.wake
	}
}

// grant gives the account's turn to the first waiter of the tenant with the
// lowest pass among those with a turn of their row; when all of them gave up
// meanwhile, the turn is spent.
func (b *budget) grant() {
	b.mu.Lock()
	defer b.mu.Unlock()
	tenant, q := "", (*queue)(nil)
	for t, c := range b.queues {
		if c.ready > 0 && (q == nil || c.pass < q.pass || (c.pass == q.pass && t < tenant)) {
			tenant, q = t, c
		}
	}
	if q == nil {
		return
	}
	b.clock = q.pass
	q.pass += 1 / max(b.weight(tenant), 1e-3)
	q.ready--
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
	q.ready = min(q.ready, len(q.waiters)) // turns beyond the waiters are spent
	if len(q.waiters) == 0 {
		if q.stop != nil {
			q.stop()
		}
		delete(b.queues, tenant)
		b.signal() // a dispatcher with no one left stops
	}
}

// signal wakes the dispatcher. The caller holds mu.
func (b *budget) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// AccountPace is the provider account's budget (c.Rate), held across the fleet
// in rates, one request at a time (Stripe counts requests a second), and split
// between the tenants waiting for it by weight, across the fleet too; nil for
// none. The budget is named by the provider's address: the API's restricted
// read key and the workers' key are one account, and one limit. It takes a
// statement of the row per call, not leases (fleetrate.Leases): with a burst
// of 1 a lease holds one call, so it would cost the same statement, and a
// call to the provider, tens of milliseconds away, dwarfs it.
func AccountPace(rates *fleetrate.Rates, c Config) Pace {
	if c.Rate <= 0 {
		return nil
	}
	sum := sha256.Sum256([]byte(c.URL))
	return rates.Shared("provider:"+hex.EncodeToString(sum[:8]), fleetrate.Limit{Rate: float64(c.Rate), Burst: 1}, time.Second)
}
