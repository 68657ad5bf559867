// Package quota keeps each tenant within its request budget: a token bucket per
// tenant (a rate and a burst), so one tenant's flood is refused or made to wait
// instead of taking what the others need. Budgets hold across a fleet by shares:
// each process enforces its share of a tenant's limit (the limit divided by the
// processes serving it), which holds while the load balancer spreads requests,
// with no shared counter on the request path.
package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/time/rate"
)

// Limit is a budget: Rate requests a second on average, Burst at once.
type Limit struct {
	Rate  float64
	Burst int
}

// Valid reports whether the limit can be enforced.
func (l Limit) Valid() error {
	if l.Rate <= 0 || math.IsInf(l.Rate, 0) || math.IsNaN(l.Rate) || l.Burst < 1 {
		return fmt.Errorf("a limit needs a rate over 0 and a burst of at least 1, not %g/%d", l.Rate, l.Burst)
	}
	return nil
}

// Store is the tenant_limits table: the tenants whose limit is not the default.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns the store.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Set gives the tenant its own limit.
func (s *Store) Set(ctx context.Context, tenant string, l Limit) error {
	if err := l.Valid(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO tenant_limits (tenant, rate, burst) VALUES ($1, $2, $3)
		ON CONFLICT (tenant) DO UPDATE SET rate = EXCLUDED.rate, burst = EXCLUDED.burst, updated_at = now()`, tenant, l.Rate, l.Burst)
	if err != nil {
		return fmt.Errorf("set the limit of %s: %w", tenant, err)
	}
	return nil
}

// Clear puts the tenant back on the default limit.
func (s *Store) Clear(ctx context.Context, tenant string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM tenant_limits WHERE tenant = $1`, tenant); err != nil {
		return fmt.Errorf("clear the limit of %s: %w", tenant, err)
	}
	return nil
}

// All returns every tenant's own limit.
func (s *Store) All(ctx context.Context) (map[string]Limit, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant, rate, burst FROM tenant_limits`)
	if err != nil {
		return nil, fmt.Errorf("read tenant limits: %w", err)
	}
	defer rows.Close()
	out := map[string]Limit{}
	for rows.Next() {
		var t string
		var l Limit
		if err := rows.Scan(&t, &l.Rate, &l.Burst); err != nil {
			return nil, fmt.Errorf("read tenant limits: %w", err)
		}
		out[t] = l
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read tenant limits: %w", err)
	}
	return out, nil
}

// Decision is what one request got: whether it may go on, and the bucket's
// state for the RateLimit fields.
type Decision struct {
	Allowed bool
	// Quota is the burst (this process's share); Window the seconds in which an
	// empty bucket fills again.
	Quota, Window int
	// Remaining is the requests the bucket still holds; Reset the seconds until
	// it is full; RetryAfter, when refused, the seconds until one is allowed.
	Remaining, Reset, RetryAfter int
}

// Limiter holds a bucket per tenant, each this process's share of the tenant's
// limit. Only authenticated tenants reach it, so it holds one bucket per tenant.
type Limiter struct {
	def    Limit
	shares int

	mu      sync.Mutex
	own     map[string]Limit
	buckets map[string]*bucket
}

type bucket struct {
	limit Limit // the share it enforces
	rl    *rate.Limiter
}

// NewLimiter enforces def for every tenant without its own limit, each process
// taking 1/shares of every limit (at least one request of burst).
func NewLimiter(def Limit, shares int) (*Limiter, error) {
	if err := def.Valid(); err != nil {
		return nil, fmt.Errorf("default limit: %w", err)
	}
	if shares < 1 {
		return nil, errors.New("shares must be at least 1")
	}
	return &Limiter{def: def, shares: shares, own: map[string]Limit{}, buckets: map[string]*bucket{}}, nil
}

// Load replaces the tenants' own limits; a tenant's bucket changes when its
// limit does.
func (l *Limiter) Load(own map[string]Limit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.own = own
}

// share is this process's part of the tenant's limit. l.mu is held.
func (l *Limiter) share(tenant string) Limit {
	lim, ok := l.own[tenant]
	if !ok {
		lim = l.def
	}
	return Limit{Rate: lim.Rate / float64(l.shares), Burst: max(1, lim.Burst/l.shares)}
}

// bucket is the tenant's bucket, made or remade for its current share. l.mu is held.
func (l *Limiter) bucket(tenant string) *bucket {
	want := l.share(tenant)
	b := l.buckets[tenant]
	if b == nil || b.limit != want {
		b = &bucket{limit: want, rl: rate.NewLimiter(rate.Limit(want.Rate), want.Burst)}
		l.buckets[tenant] = b
	}
	return b
}

// Allow takes one request from the tenant's bucket, if it has one.
func (l *Limiter) Allow(tenant string) Decision {
	now := time.Now()
	l.mu.Lock()
	b := l.bucket(tenant)
	l.mu.Unlock()
	d := Decision{Quota: b.limit.Burst, Window: seconds(float64(b.limit.Burst) / b.limit.Rate)}
	d.Allowed = b.rl.AllowN(now, 1)
	tokens := b.rl.TokensAt(now)
	d.Remaining = max(0, int(math.Floor(tokens)))
	d.Reset = seconds((float64(b.limit.Burst) - tokens) / b.limit.Rate)
	if !d.Allowed {
		d.RetryAfter = max(1, seconds((1-tokens)/b.limit.Rate))
	}
	return d
}

// Wait blocks until the tenant's bucket has a request for it, or ctx ends.
func (l *Limiter) Wait(ctx context.Context, tenant string) error {
	l.mu.Lock()
	b := l.bucket(tenant)
	l.mu.Unlock()
	return b.rl.Wait(ctx)
}

// Refresh loads the tenants' own limits from the store every interval until ctx
// ends; a failed read keeps the limits it had.
func (l *Limiter) Refresh(ctx context.Context, s *Store, every time.Duration, logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if own, err := s.All(ctx); err == nil {
			l.Load(own)
		} else if ctx.Err() == nil {
			logger.Warn("tenant limits: keeping the last ones read", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// seconds rounds up to whole seconds, never below 0.
func seconds(s float64) int {
	if s <= 0 {
		return 0
	}
	return int(math.Ceil(s))
}
