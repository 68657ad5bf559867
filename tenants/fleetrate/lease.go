package fleetrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// LeaseTTL is how long a process may spend a lease: a token taken from the
// fleet's row is spent within it or given back. Every request admitted was
// taken from the row at most this long before, so over any window the fleet
// admits at most Rate x LeaseTTL more than the row alone would: a tenth of a
// second's worth.
const LeaseTTL = 100 * time.Millisecond

// burstShare bounds a lease to a tenth of the burst, so that a few processes
// holding leases leave the rest of the burst to the others.
const burstShare = 10

// maxLeases bounds the leases a process keeps; past it, the spent ones go.
const maxLeases = 10000

// slots is the fleet's rows as leases use them (Rates; a fake in tests).
type slots interface {
	// lease gives back the back tokens this process did not spend, then takes
	// up to want more, one statement: it returns the tokens taken and how far
	// the budget's due time is then past now.
	lease(ctx context.Context, name string, l Limit, back, want int) (int, time.Duration, error)
}

// Leases spends the fleet's budgets in slices: a process takes several tokens
// of a budget's row with one statement, spends them in memory for LeaseTTL and
// gives back what it did not spend, so a request costs a statement only once
// per lease. A lease grows while a process spends it before it ends, and
// shrinks to what it spent when it does not: at most a tenth of the burst and
// Rate x LeaseTTL. A budget found empty is not asked again until a lease has
// built up in it, or for a lease's time if sooner.
type Leases struct {
	rows  slots
	ttl   time.Duration
	fixed int // every lease's size; 0: adaptive
	now   func() time.Time
	after func(time.Duration, func())

	mu   sync.Mutex
	held map[string]*lease
}

// lease is a process's slice of one budget. Its fields are guarded by
// Leases.mu; turn is held by the one caller renewing it.
type lease struct {
	turn  chan struct{}
	limit Limit
	gen   int // renewals so far: a give-back for an older one is moot

	left, size, granted int // unspent, to ask next, taken last
	expires             time.Time
	remaining           int       // what the row held after the last lease
	full                time.Time // when the row is full again, as last read
	// When the row had none: its next token, and until when this process
	// refuses without asking (until a lease builds up, a lease's time at
	// most, so that tokens other processes give back are seen).
	retryAt, emptyUntil time.Time
}

// Leases returns leases on the fleet's rows, sized adaptively.
func (r *Rates) Leases() *Leases { return newLeases(r, LeaseTTL, 0, time.Now, afterFunc) }

func afterFunc(d time.Duration, f func()) { time.AfterFunc(d, f) }

func newLeases(rows slots, ttl time.Duration, fixed int, now func() time.Time, after func(time.Duration, func())) *Leases {
	return &Leases{rows: rows, ttl: ttl, fixed: fixed, now: now, after: after, held: map[string]*lease{}}
}

// maxSize is the largest lease of l: a tenth of its burst and what it earns
// in a ttl, at least 1.
func maxSize(l Limit, ttl time.Duration) int {
	return max(1, min(l.Burst/burstShare, int(l.Rate*ttl.Seconds())))
}

// Take spends one token of the named budget at l, from this process's lease
// when it holds one, or else from a new lease of the fleet's row.
func (ls *Leases) Take(ctx context.Context, name string, l Limit) (Decision, error) {
	ls.mu.Lock()
	le := ls.leaseOf(name, l)
	d, ok := le.local(ls.now())
	ls.mu.Unlock()
	if ok {
		return d, nil
	}
	select {
	case le.turn <- struct{}{}:
	case <-ctx.Done():
		return Decision{}, fmt.Errorf("budget %s: %w", name, ctx.Err())
	}
	defer func() { <-le.turn }()
	ls.mu.Lock()
	now := ls.now()
	if d, ok := le.local(now); ok { // renewed meanwhile
		ls.mu.Unlock()
		return d, nil
	}
	back, want := le.handBack(now), ls.want(le)
	le.gen++
	ls.mu.Unlock()
	got, ahead, err := ls.rows.lease(ctx, name, l, back, want)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if err != nil {
		return Decision{}, err // what it gave back is lost: the budget is short a moment, never over
	}
	d = le.renewed(ls.now(), got, want, ahead, ls.ttl)
	if got > 1 {
		gen := le.gen
		ls.after(ls.ttl, func() { ls.giveBack(name, le, gen) })
	}
	return d, nil
}

// leaseOf is the process's lease of the named budget, new when l changed.
// The caller holds mu.
func (ls *Leases) leaseOf(name string, l Limit) *lease {
	le := ls.held[name]
	if le != nil && le.limit == l {
		return le
	}
	if len(ls.held) >= maxLeases {
		now := ls.now()
		for n, old := range ls.held {
			if old.left == 0 || !now.Before(old.expires) {
				delete(ls.held, n)
			}
		}
	}
	le = &lease{turn: make(chan struct{}, 1), limit: l, size: 1}
	ls.held[name] = le
	return le
}

// want is the size of le's next lease. The caller holds mu.
func (ls *Leases) want(le *lease) int {
	if ls.fixed > 0 {
		return ls.fixed
	}
	return min(le.size, maxSize(le.limit, ls.ttl))
}

// local spends a token of the lease, or refuses while the row is known empty;
// false when the row must be asked.
func (le *lease) local(now time.Time) (Decision, bool) {
	if le.left > 0 && now.Before(le.expires) {
		le.left--
		return le.allowed(now), true
	}
	if now.Before(le.emptyUntil) {
		return Decision{Reset: max(0, le.full.Sub(now)), RetryAfter: max(le.retryAt.Sub(now), time.Millisecond)}, true
	}
	return Decision{}, false
}

func (le *lease) allowed(now time.Time) Decision {
	return Decision{Allowed: true, Remaining: min(le.limit.Burst, le.remaining+le.left), Reset: max(0, le.full.Sub(now))}
}

// handBack is what the lease gives back with its renewal: its unspent tokens,
// once it ended. It sizes the next lease by what this one saw: twice as much
// when it was spent before it ended, what was spent when it ended first.
func (le *lease) handBack(now time.Time) int {
	back := 0
	if le.left > 0 && !now.Before(le.expires) {
		back = le.left
		le.size = max(1, le.granted-le.left)
	} else if le.granted > 0 && now.Before(le.expires) {
		le.size = 2 * le.granted
	}
	le.left = 0
	return back
}

// renewed records a lease of got tokens of the want asked, the row's due time
// ahead past now, and spends the first of them.
func (le *lease) renewed(now time.Time, got, want int, ahead, ttl time.Duration) Decision {
	every := le.limit.interval()
	full := time.Duration(le.limit.Burst) * every
	le.granted, le.full = got, now.Add(ahead)
	if retry := ahead + every - full; retry > 0 {
		// The row has no token left: asked again once a lease has built up
		// in it, so that a flood costs a statement a lease's time, not one a
		// token.
		le.retryAt, le.emptyUntil = now.Add(retry), now.Add(min(ttl, max(retry, time.Duration(want)*every)))
	}
	if got == 0 {
		return Decision{Reset: max(0, ahead), RetryAfter: max(le.retryAt.Sub(now), time.Millisecond)}
	}
	le.left, le.expires = got-1, now.Add(ttl)
	le.remaining = max(0, int(math.Floor((full-ahead).Seconds()/every.Seconds()+1e-9)))
	return le.allowed(now)
}

// giveBack returns what lease gen of le left unspent once it ended, unless a
// caller renews it meanwhile (and gives it back then). A give-back that fails
// loses the tokens: the budget is short a moment, never over.
func (ls *Leases) giveBack(name string, le *lease, gen int) {
	select {
	case le.turn <- struct{}{}:
	default:
		return
	}
	defer func() { <-le.turn }()
	ls.mu.Lock()
	if le.gen != gen || le.left == 0 {
		ls.mu.Unlock()
		return
	}
	back := le.handBack(ls.now().Add(ls.ttl)) // it has ended, whatever the clock says
	le.gen++
	ls.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _, _ = ls.rows.lease(ctx, name, le.limit, back, 0)
}

// grant gives back $4 tokens not spent, then takes up to $5 (at most what the
// row holds), in one statement: the row is locked, read, then moved. No row
// is no answer: the budget's first lease makes it (start). A lease at another
// interval gives nothing back and keeps what was taken ahead (since).
const grant = `
WITH cur AS (
	SELECT s.name, CASE WHEN s.every = $2::interval
		THEN greatest(s.due - $2::interval * $4::int, statement_timestamp())
		ELSE statement_timestamp() + ` + takenAhead + ` END AS since, s.every = $2::interval AS same
	FROM rate_slots s WHERE s.name = $1 FOR UPDATE),
took AS (
	SELECT name, since, same, greatest(0, least($5::int,
		floor(extract(epoch FROM statement_timestamp() + $3::interval - since) / extract(epoch FROM $2::interval) + 1e-9)))::int AS n
	FROM cur),
moved AS (
	UPDATE rate_slots s SET due = t.since + $2::interval * t.n, every = $2::interval
	FROM took t WHERE s.name = t.name AND (t.n > 0 OR ($4::int > 0 AND t.same))
	RETURNING 1)
SELECT n, extract(epoch FROM since + $2::interval * n - statement_timestamp())::float8 FROM took`

// start makes a budget's row with its first lease, if no process made it first.
const start = `
INSERT INTO rate_slots (name, due, every) VALUES ($1, statement_timestamp() + $2::interval * $3::int, $2::interval)
ON CONFLICT (name) DO NOTHING
RETURNING extract(epoch FROM due - statement_timestamp())::float8`

func (r *Rates) lease(ctx context.Context, name string, l Limit, back, want int) (int, time.Duration, error) {
	full := time.Duration(l.Burst) * l.interval()
	for range 2 {
		var n int
		var ahead float64
		err := r.pool.QueryRow(ctx, grant, name, l.interval(), full, back, want).Scan(&n, &ahead)
		if err == nil {
			return n, seconds(ahead), nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, 0, fmt.Errorf("budget %s: lease: %w", name, err)
		}
		if want == 0 {
			return 0, 0, nil // nothing to give back to
		}
		first := min(want, l.Burst)
		err = r.pool.QueryRow(ctx, start, name, l.interval(), first).Scan(&ahead)
		if err == nil {
			return first, seconds(ahead), nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, 0, fmt.Errorf("budget %s: first lease: %w", name, err)
		}
	}
	return 0, 0, fmt.Errorf("budget %s: no row after making it", name)
}
