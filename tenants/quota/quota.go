// Package quota keeps each tenant within its request budget (a rate and a
// burst), so one tenant's flood is refused or made to wait instead of taking
// what the others need. A budget is the fleet's: it holds whatever the number of
// API processes and workers taking from it.
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

	"github.com/orderflow/orderflow/tenants/fleetrate"
)

// Limit is a budget: Rate requests a second on average, Burst at once.
type Limit = fleetrate.Limit

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

// Decision is what one request got: whether it may go on, and the budget's
// state for the RateLimit fields.
type Decision struct {
	Allowed bool
	// Quota is the burst; Window the seconds in which an empty budget fills again.
	Quota, Window int
	// Remaining is the requests the budget still holds; Reset the seconds until
	// it is full; RetryAfter, when refused, the seconds until one is allowed.
	Remaining, Reset, RetryAfter int
}

// Limiter keeps each tenant within its limit across the whole fleet: the
// budget is the tenant's row in the fleet's rates (fleetrate), which every API
// process and worker takes from, in leases (fleetrate.Leases): a request
// spends a token this process holds, and the row is asked once per lease. A
// bucket in the process at the same limit answers first, so a tenant's flood
// is refused here once this process alone has seen more than the whole limit
// allows. Only authenticated tenants reach it, so it holds one bucket per
// tenant.
type Limiter struct {
	scope  string
	def    Limit
	rates  *fleetrate.Rates
	leases *fleetrate.Leases

	mu    sync.Mutex
	own   map[string]Limit
	local map[string]*bucket
}

type bucket struct {
	limit Limit
	rl    *rate.Limiter
}

// NewLimiter enforces def for every tenant without its own limit, in rates.
// Each scope is a budget of its own: the API's requests ("api") and the Kafka
// events ("events") each get the tenant's limit.
func NewLimiter(scope string, def Limit, rates *fleetrate.Rates) (*Limiter, error) {
	if err := def.Valid(); err != nil {
		return nil, fmt.Errorf("default limit: %w", err)
	}
	if rates == nil {
		return nil, errors.New("a limiter needs the fleet's rates")
	}
	return &Limiter{scope: scope, def: def, rates: rates, leases: rates.Leases(), own: map[string]Limit{}, local: map[string]*bucket{}}, nil
}

// Load replaces the tenants' own limits.
func (l *Limiter) Load(own map[string]Limit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.own = own
}

// limit is the tenant's limit and this process's bucket at it.
func (l *Limiter) limit(tenant string) (Limit, *bucket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.own[tenant]
	if !ok {
		lim = l.def
	}
	b := l.local[tenant]
	if b == nil || b.limit != lim {
		b = &bucket{limit: lim, rl: rate.NewLimiter(rate.Limit(lim.Rate), lim.Burst)}
		l.local[tenant] = b
	}
	return lim, b
}

// budget names the tenant's row in the fleet's rates.
func (l *Limiter) budget(tenant string) string { return l.scope + ":tenant:" + tenant }

// Allow takes one request from the tenant's budget, if it has one. When the
// fleet's rates cannot be read the request goes on, with the error: a process
// that cannot reach its database answers the request unavailable anyway.
func (l *Limiter) Allow(ctx context.Context, tenant string) (Decision, error) {
	lim, b := l.limit(tenant)
	d := Decision{Quota: lim.Burst, Window: seconds(float64(lim.Burst) / lim.Rate)}
	if now := time.Now(); !b.rl.AllowN(now, 1) {
		tokens := b.rl.TokensAt(now)
		d.Reset = seconds((float64(lim.Burst) - tokens) / lim.Rate)
		d.RetryAfter = max(1, seconds((1-tokens)/lim.Rate))
		return d, nil
	}
	f, err := l.leases.Take(ctx, l.budget(tenant), lim)
	if err != nil {
		d.Allowed, d.Remaining = true, lim.Burst-1
		return d, err
	}
	d.Allowed, d.Remaining, d.Reset = f.Allowed, f.Remaining, seconds(f.Reset.Seconds())
	if !f.Allowed {
		d.RetryAfter = max(1, seconds(f.RetryAfter.Seconds()))
	}
	return d, nil
}

// horizon is how far ahead a waiting caller takes its request's time.
const horizon = 2 * time.Second

// Wait blocks until the tenant's budget has a request for it, or ctx ends.
func (l *Limiter) Wait(ctx context.Context, tenant string) error {
	lim, _ := l.limit(tenant)
	return l.rates.Wait(ctx, l.budget(tenant), lim, horizon)
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
