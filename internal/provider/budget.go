package provider

import (
	"context"
	"net/http"
	"sync"

	"golang.org/x/time/rate"
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

// Budgeted keeps the requests through it under perSecond, the process's share of
// the provider account's rate limit (Stripe allows 100 a second live, 25 in test
// mode), so the provider seldom answers 429. The budget is shared fairly: when
// requests wait, each tenant with one waiting gets the next token in turn (those
// without a tenant count as one), so one tenant's backlog of payments cannot
// make another's wait behind all of it. A request waits as long as its context
// lets it. perSecond <= 0 is no budget.
func Budgeted(next http.RoundTripper, perSecond float64) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if perSecond <= 0 {
		return next
	}
	return &budget{next: next, limit: rate.NewLimiter(rate.Limit(perSecond), 1),
		queues: map[string][]chan struct{}{}, waiting: make(chan struct{}, 1)}
}

type budget struct {
	next  http.RoundTripper
	limit *rate.Limiter
	start sync.Once

	mu      sync.Mutex
	queues  map[string][]chan struct{} // each tenant's waiters, first come first
	turns   []string                   // tenants with waiters, served in turn
	turn    int                        // the next in turns
	waiting chan struct{}              // a waiter arrived
}

func (b *budget) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := b.acquire(r.Context(), tenantOf(r.Context())); err != nil {
		return nil, err
	}
	return b.next.RoundTrip(r)
}

// acquire waits for a token handed to this request.
func (b *budget) acquire(ctx context.Context, tenant string) error {
	b.start.Do(func() { go b.dispatch() })
	granted := make(chan struct{})
	b.mu.Lock()
	if len(b.queues[tenant]) == 0 {
		b.turns = append(b.turns, tenant)
	}
	b.queues[tenant] = append(b.queues[tenant], granted)
	b.mu.Unlock()
	select {
	case b.waiting <- struct{}{}:
	default:
	}
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

// dispatch hands out tokens at the rate, to the tenants in turn, while any wait.
// It lives as long as the process: the budget is the process's.
func (b *budget) dispatch() {
	for range b.waiting {
		for {
			b.mu.Lock()
			idle := len(b.turns) == 0
			b.mu.Unlock()
			if idle {
				break
			}
			_ = b.limit.Wait(context.Background())
			b.mu.Lock()
			if len(b.turns) > 0 {
				b.turn %= len(b.turns)
				tenant := b.turns[b.turn]
				granted := b.queues[tenant][0]
				b.remove(tenant, granted)
				if len(b.queues[tenant]) > 0 {
					b.turn++ // the tenant keeps its place; the next one is served next
				}
				close(granted)
			}
			b.mu.Unlock()
		}
	}
}

// remove takes a waiter out of its tenant's queue, and the tenant out of the
// turns once it has none. The caller holds mu.
func (b *budget) remove(tenant string, granted chan struct{}) {
	q := b.queues[tenant]
	for i, g := range q {
		if g == granted {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		b.queues[tenant] = q
		return
	}
	delete(b.queues, tenant)
	for i, t := range b.turns {
		if t == tenant {
			b.turns = append(b.turns[:i], b.turns[i+1:]...)
			if i < b.turn {
				b.turn--
			}
			break
		}
	}
}
