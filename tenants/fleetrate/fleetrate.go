// Package fleetrate keeps rates that hold across every process of the fleet: a
// budget is one PostgreSQL row holding when its next request is due (the generic
// cell rate algorithm), which every process moves with one statement per
// request. A budget of R a second with a burst of B admits, over any window of
// t seconds, at most R*t + B requests, whether one process takes them or thirty.
package fleetrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// interval is the time one request takes of the budget.
func (l Limit) interval() time.Duration { return time.Duration(float64(time.Second) / l.Rate) }

// Rates is the rate_slots table.
type Rates struct{ pool *pgxpool.Pool }

// New returns the fleet's rates, kept in pool's database.
func New(pool *pgxpool.Pool) *Rates { return &Rates{pool: pool} }

// Decision is what one request got from Take.
type Decision struct {
	Allowed bool
	// Remaining is the requests the budget still allows at once; Reset the time
	// until it is full again; RetryAfter, when refused, the time until one is.
	Remaining         int
	Reset, RetryAfter time.Duration
}

// take moves the budget's due time one interval on, unless that would put it
// more than ahead past now; it returns how far the due time then is past now,
// and whether it moved. The database's clock is the fleet's one clock.
const take = `
INSERT INTO rate_slots AS s (name, due, every) VALUES ($1, statement_timestamp() + $2::interval, $2::interval)
ON CONFLICT (name) DO UPDATE SET due = ` + since + ` + $2::interval, every = $2::interval
	WHERE ` + since + ` + $2::interval <= statement_timestamp() + $3::interval
RETURNING extract(epoch FROM due - statement_timestamp())::float8`

// since is when the budget's next request is due, or now if that has passed.
// A budget asked at another interval (a tenant given its own limit, or its
// share of a shared budget read while tenants came and went, which processes
// read each at its own time) keeps the requests already taken ahead, counted
// at the new interval: started afresh, processes that disagreed on the
// interval, turn about, took every request at once.
const since = `CASE WHEN s.every = $2::interval THEN greatest(s.due, statement_timestamp())
	ELSE statement_timestamp() + ` + takenAhead + ` END`

// takenAhead is the time the requests taken ahead of now at the row's interval
// take at $2's.
const takenAhead = `greatest(s.due - statement_timestamp(), interval '0') * (extract(epoch FROM $2::interval) / extract(epoch FROM s.every))`

// ahead is how far the budget's next due time is past now, once more taken.
const ahead = `SELECT extract(epoch FROM ` + since + ` + $2::interval - statement_timestamp())::float8
	FROM rate_slots s WHERE name = $1`

// Take admits one request to the named budget if it has one now: what a caller
// that is refused, rather than made to wait, asks.
func (r *Rates) Take(ctx context.Context, name string, l Limit) (Decision, error) {
	full := time.Duration(l.Burst) * l.interval()
	var due float64
	err := r.pool.QueryRow(ctx, take, name, l.interval(), full).Scan(&due)
	if errors.Is(err, pgx.ErrNoRows) {
		if err = r.pool.QueryRow(ctx, ahead, name, l.interval()).Scan(&due); err != nil {
			return Decision{}, fmt.Errorf("budget %s: %w", name, err)
		}
		return Decision{Reset: seconds(due - l.interval().Seconds()), RetryAfter: seconds(due) - full}, nil
	}
	if err != nil {
		return Decision{}, fmt.Errorf("budget %s: %w", name, err)
	}
	left := (full.Seconds() - due) / l.interval().Seconds()
	return Decision{Allowed: true, Remaining: max(0, int(math.Floor(left+1e-9))), Reset: seconds(due)}, nil
}

// Wait takes the named budget's next request time, then waits for it, or until
// ctx ends: what a caller that must not be refused (a Kafka event, a call to
// the provider) asks. A request time taken is spent even when ctx ends first,
// so Wait takes none more than horizon ahead, and asks again nearer to it.
func (r *Rates) Wait(ctx context.Context, name string, l Limit, horizon time.Duration) error {
	full := time.Duration(l.Burst) * l.interval()
	for {
		var due float64
		err := r.pool.QueryRow(ctx, take, name, l.interval(), full+horizon).Scan(&due)
		var wait time.Duration
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			wait = max(horizon/2, l.interval()) // every time within the horizon is taken
		case err != nil:
			return fmt.Errorf("budget %s: %w", name, err)
		default:
			wait = seconds(due) - full
			if wait <= 0 {
				return nil
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if err == nil {
			return nil
		}
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// activeFor is how long a tenant that waited for a shared budget counts as one
// of those sharing it.
const activeFor = 3 * time.Second

// share records that tenant waits for budget with weight, and returns the
// weights of all the tenants waiting for it lately, its own included.
const share = `
WITH seen AS (
	INSERT INTO rate_tenants (budget, tenant, weight, seen) VALUES ($1, $2, $3, statement_timestamp())
	ON CONFLICT (budget, tenant) DO UPDATE SET weight = EXCLUDED.weight, seen = EXCLUDED.seen
	RETURNING 1)
SELECT $3 + COALESCE(sum(weight), 0) FROM rate_tenants
WHERE budget = $1 AND tenant <> $2 AND seen > statement_timestamp() - $4::interval`

// Share is tenant's part of the named budget at l, by its weight among the
// tenants that waited for the budget within the last few seconds, in any
// process: the limit of the tenant's own row of the budget (Tenant).
func (r *Rates) Share(ctx context.Context, name, tenant string, weight float64, l Limit) (Limit, error) {
	var total float64
	if err := r.pool.QueryRow(ctx, share, name, tenant, weight, activeFor).Scan(&total); err != nil {
		return Limit{}, fmt.Errorf("budget %s: share of %q: %w", name, tenant, err)
	}
	return Limit{Rate: l.Rate * weight / total, Burst: 1}, nil
}

// Tenant names tenant's row of the named budget.
func Tenant(name, tenant string) string { return name + ":tenant:" + tenant }

// Shared is a budget that the tenants waiting for it split by weight, whichever
// processes hold whose requests (provider.Pace): a request of a tenant's takes
// a turn of the tenant's row, at its share of the rate, then one of the
// budget's own row, which holds the whole.
type Shared struct {
	rates   *Rates
	name    string
	limit   Limit
	horizon time.Duration

	mu     sync.Mutex
	shares map[string]cachedShare // read at most once a second per tenant
}

type cachedShare struct {
	limit Limit
	at    time.Time
}

// shareFresh is how long a process trusts a tenant's share: within activeFor,
// so a tenant that keeps waiting keeps counting.
const shareFresh = time.Second

// Shared returns the named budget at l, split between tenants by weight.
func (r *Rates) Shared(name string, l Limit, horizon time.Duration) *Shared {
	return &Shared{rates: r, name: name, limit: l, horizon: horizon, shares: map[string]cachedShare{}}
}

// Wait waits for the budget's next request of tenant's: a turn of the tenant's
// row, then one of the budget's.
func (s *Shared) Wait(ctx context.Context, tenant string, weight float64) error {
	if err := s.WaitTenant(ctx, tenant, weight); err != nil {
		return err
	}
	return s.WaitAccount(ctx)
}

// WaitTenant waits for the next turn of tenant's own row, at its share of the
// budget by weight. A caller waits on several tenants' rows side by side, so
// one tenant's slow row holds up no other tenant.
func (s *Shared) WaitTenant(ctx context.Context, tenant string, weight float64) error {
	share, err := s.share(ctx, tenant, weight)
	if err != nil {
		return err
	}
	return s.rates.Wait(ctx, Tenant(s.name, tenant), share, s.horizon)
}

// WaitAccount waits for the next turn of the budget's own row, which holds the
// whole whoever's request it is.
func (s *Shared) WaitAccount(ctx context.Context) error {
	return s.rates.Wait(ctx, s.name, s.limit, s.horizon)
}

func (s *Shared) share(ctx context.Context, tenant string, weight float64) (Limit, error) {
	s.mu.Lock()
	c, ok := s.shares[tenant]
	s.mu.Unlock()
	if ok && time.Since(c.at) < shareFresh {
		return c.limit, nil
	}
	l, err := s.rates.Share(ctx, s.name, tenant, weight, s.limit)
	if err != nil {
		return Limit{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.shares) > maxCachedShares {
		clear(s.shares) // tenants that stopped waiting: read again when they do
	}
	s.shares[tenant] = cachedShare{limit: l, at: time.Now()}
	return l, nil
}

// maxCachedShares bounds a process's cache of tenants' shares.
const maxCachedShares = 10000
