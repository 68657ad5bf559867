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
// and whether it moved. The database's clock is the fleet's one clock. A
// budget whose interval changed (a tenant given its own limit) starts afresh.
const take = `
INSERT INTO rate_slots AS s (name, due, every) VALUES ($1, statement_timestamp() + $2::interval, $2::interval)
ON CONFLICT (name) DO UPDATE SET due = ` + since + ` + $2::interval, every = $2::interval
	WHERE ` + since + ` + $2::interval <= statement_timestamp() + $3::interval
RETURNING extract(epoch FROM due - statement_timestamp())::float8`

// since is when the budget's next request is due, or now if that has passed.
const since = `CASE WHEN s.every = $2::interval THEN greatest(s.due, statement_timestamp()) ELSE statement_timestamp() END`

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

// Pace is one named budget that its callers wait on (provider.Pace).
type Pace struct {
	rates   *Rates
	name    string
	limit   Limit
	horizon time.Duration
}

// Pace returns the named budget at l, for callers that wait.
func (r *Rates) Pace(name string, l Limit, horizon time.Duration) Pace {
	return Pace{rates: r, name: name, limit: l, horizon: horizon}
}

// Wait waits for the budget's next request.
func (p Pace) Wait(ctx context.Context) error { return p.rates.Wait(ctx, p.name, p.limit, p.horizon) }
