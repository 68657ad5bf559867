package fleetrate

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
)

// clock is a fake clock whose timers run when it is moved past them.
type clock struct {
	mu     sync.Mutex
	at     time.Time
	timers []timer
}

type timer struct {
	at time.Time
	f  func()
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *clock) after(d time.Duration, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timers = append(c.timers, timer{at: c.at.Add(d), f: f})
}

// advance moves the clock d on and runs the timers due by then.
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.at = c.at.Add(d)
	var due []func()
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.at) {
			kept = append(kept, t)
		} else {
			due = append(due, t.f)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// row is rate_slots' row of one budget in memory, on the fake clock: the same
// GCRA as the statements, counting them.
type row struct {
	clock *clock

	mu         sync.Mutex
	made       bool
	due        time.Time
	every      time.Duration
	statements int
}

func (r *row) lease(_ context.Context, _ string, l Limit, back, want int) (int, time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statements++
	now, every := r.clock.now(), l.interval()
	if !r.made {
		if want == 0 {
			return 0, 0, nil
		}
		n := min(want, l.Burst)
		r.made, r.due, r.every = true, now.Add(time.Duration(n)*every), every
		return n, r.due.Sub(now), nil
	}
	since, same := now, r.every == every
	if same {
		since = later(r.due.Add(-time.Duration(back)*every), now)
	} else if ahead := r.due.Sub(now); ahead > 0 {
		since = now.Add(time.Duration(float64(ahead) * every.Seconds() / r.every.Seconds()))
	}
	full := time.Duration(l.Burst) * every
	n := max(0, min(want, int(math.Floor(now.Add(full).Sub(since).Seconds()/every.Seconds()+1e-9))))
	if n > 0 || (back > 0 && same) {
		r.due, r.every = since.Add(time.Duration(n)*every), every
	}
	return n, since.Add(time.Duration(n) * every).Sub(now), nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// offer sends the budget a request every gap for d, round-robin over procs
// processes' leases (fixed: their size, 0 adaptive), and returns the requests
// admitted, those admitted after skip, and the statements the fleet's row
// ran. Every refusal must say when to retry.
func offer(t *testing.T, procs, fixed int, l Limit, gap, d, skip time.Duration) (admitted, late, statements int) {
	t.Helper()
	c := &clock{at: time.Unix(1e9, 0)}
	r := &row{clock: c}
	var fleet []*Leases
	for range procs {
		fleet = append(fleet, newLeases(r, LeaseTTL, fixed, c.now, c.after))
	}
	for i, at := 0, time.Duration(0); at < d; i, at = i+1, at+gap {
		dec, err := fleet[i%procs].Take(context.Background(), "api:tenant:a", l)
		switch {
		case err != nil:
			t.Fatal(err)
		case dec.Allowed:
			admitted++
			if at >= skip {
				late++
			}
		case dec.RetryAfter <= 0 || dec.RetryAfter > l.interval():
			t.Fatalf("refused with Retry-After %s, want (0, %s]", dec.RetryAfter, l.interval())
		}
		c.advance(gap)
	}
	return admitted, late, r.statements
}

// A tenant of 100 a second with a burst of 200, flooded at 10,000 a second
// through 1, 3 and 6 processes' leases: over ten seconds the fleet admits the
// burst and 100 a second (within 10%), every refusal says when to retry, and
// the flood costs the fleet's row a statement a lease's time per process, not
// one a request.
func TestLeasesHoldTheLimitAcrossProcesses(t *testing.T) {
	l := Limit{Rate: 100, Burst: 200}
	for _, procs := range []int{1, 3, 6} {
		admitted, late, statements := offer(t, procs, 0, l, 100*time.Microsecond, 10*time.Second, 2*time.Second)
		perSecond := float64(late) / 8
		t.Logf("%d processes: %d admitted (%.1f/s past the burst), %d statements", procs, admitted, perSecond, statements)
		if limit := 200 + 100*10; admitted < limit*9/10 || admitted > limit*11/10 {
			t.Errorf("%d processes admitted %d in 10 s, want %d within 10%%", procs, admitted, limit)
		}
		if perSecond < 90 || perSecond > 110 {
			t.Errorf("%d processes admitted %.1f a second past the burst, want 100 within 10%%", procs, perSecond)
		}
		if most := procs * 10 * 10 * 2; statements > most {
			t.Errorf("%d processes ran %d statements in 10 s, want at most %d (two a lease's time each)", procs, statements, most)
		}
	}
}

// What a lease's size costs: statements per request while a tenant sends half
// its limit, and, flooded at ten times it, statements per request and what is
// admitted past the limit, at 1, 3 and 6 processes. Logged as a table.
func TestLeaseSizes(t *testing.T) {
	l := Limit{Rate: 1000, Burst: 2000}
	for _, fixed := range []int{1, 20, 100, 0} {
		line := fmt.Sprintf("| %d |", fixed)
		if fixed == 0 {
			line = "| adaptive |"
		}
		for _, procs := range []int{1, 3, 6} {
			admitted, _, statements := offer(t, procs, fixed, l, 2*time.Millisecond, 5*time.Second, 0)
			line += fmt.Sprintf(" %.3f /", float64(statements)/float64(admitted))
			admitted, _, statements = offer(t, procs, fixed, l, 100*time.Microsecond, 5*time.Second, 0)
			over := float64(admitted)/float64(2000+1000*5) - 1
			line += fmt.Sprintf(" %.4f, %+.1f%% |", float64(statements)/50000, 100*over)
			if over > 0.1 || over < -0.1 {
				t.Errorf("lease %d over %d processes admitted %d, want %d within 10%%", fixed, procs, admitted, 7000)
			}
		}
		t.Log(line)
	}
}

// A process that stops spending gives its lease's rest back once it ends, so
// another process can spend it.
func TestUnspentLeaseGoesBack(t *testing.T) {
	c := &clock{at: time.Unix(1e9, 0)}
	r := &row{clock: c}
	a, b := newLeases(r, LeaseTTL, 10, c.now, c.after), newLeases(r, LeaseTTL, 10, c.now, c.after)
	l := Limit{Rate: 0.001, Burst: 10} // gives nothing back within the test
	take := func(ls *Leases) Decision {
		d, err := ls.Take(context.Background(), "b", l)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := take(a); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("first: %+v, want allowed with 9 remaining", d)
	}
	if d := take(b); d.Allowed {
		t.Fatalf("another process while the first holds the burst: %+v, want refused", d)
	}
	c.advance(LeaseTTL)
	c.advance(time.Millisecond)
	allowed := 0
	for range 20 {
		if take(b).Allowed {
			allowed++
		}
		c.advance(time.Second) // past b's refusal
	}
	if allowed != 9 {
		t.Fatalf("the other process had %d of the 9 given back", allowed)
	}
}
