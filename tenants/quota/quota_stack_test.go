//go:build stack

package quota_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/tenants/fleetrate"
	"github.com/orderflow/orderflow/tenants/quota"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

func limiter(t *testing.T, scope string, def quota.Limit) *quota.Limiter {
	t.Helper()
	l, err := quota.NewLimiter(scope, def, fleetrate.New(stacktest.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func allow(t *testing.T, l *quota.Limiter, tenant string) quota.Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLimiterPerTenant(t *testing.T) {
	l := limiter(t, "api", quota.Limit{Rate: 0.5, Burst: 3})
	flood, quiet := stacktest.Name("flood"), stacktest.Name("quiet")
	for i := range 3 {
		if d := allow(t, l, flood); !d.Allowed || d.Remaining != 2-i || d.Quota != 3 || d.Window != 6 {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	d := allow(t, l, flood)
	if d.Allowed || d.RetryAfter < 1 || d.RetryAfter > 2 || d.Remaining != 0 || d.Reset < 5 {
		t.Fatalf("over the burst: %+v, want refused with Retry-After 1-2 s", d)
	}
	if d := allow(t, l, quiet); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("another tenant: %+v", d)
	}
	// Another scope is a budget of its own.
	if d := allow(t, limiter(t, "events", quota.Limit{Rate: 0.5, Burst: 3}), flood); !d.Allowed {
		t.Fatalf("the tenant's events budget: %+v", d)
	}
	// A tenant's own limit, once loaded, replaces the default.
	l.Load(map[string]quota.Limit{flood: {Rate: 100, Burst: 50}})
	if d := allow(t, l, flood); !d.Allowed || d.Quota != 50 {
		t.Fatalf("after its own limit: %+v", d)
	}
	for _, bad := range []quota.Limit{{Rate: 0, Burst: 1}, {Rate: 1, Burst: 0}, {Rate: -1, Burst: 5}} {
		if _, err := quota.NewLimiter("api", bad, fleetrate.New(nil)); err == nil {
			t.Errorf("NewLimiter(%+v) took it", bad)
		}
	}
}

// processes returns n limiters of def, each with a pool of its own, as n API
// processes would have.
func processes(t *testing.T, n int, def quota.Limit) []*quota.Limiter {
	t.Helper()
	stacktest.Pool(t) // migrated
	env := stacktest.Env(t)
	var procs []*quota.Limiter
	for range n {
		pool, err := database.Open(context.Background(), env["DATABASE_URL"], 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		l, err := quota.NewLimiter("api", def, fleetrate.New(pool))
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, l)
	}
	return procs
}

// earned is the requests a budget of rate a second gives back within d: a
// budget admits at most its burst plus these over any d.
func earned(rate float64, d time.Duration) int { return int(rate * d.Seconds()) }

// Three processes (pools and limiters of their own) share one tenant's budget of
// 8 requests with 2 a second: a burst over all three admits 8, not 8 each, and
// over four more seconds of requests spread across them about 2 a second more.
// A busy machine can stretch the burst past the half second in which the budget
// gives a request back, so each count is held to 8 plus what the budget gave
// back between the first request sent and the last one admitted.
func TestOneBudgetAcrossProcesses(t *testing.T) {
	procs := processes(t, 3, quota.Limit{Rate: 2, Burst: 8})
	tenant := stacktest.Name("tenant")
	var burst int
	var last time.Duration // since began, when the last admitted answer came
	began := time.Now()
	for i := range 30 {
		if allow(t, procs[i%3], tenant).Allowed {
			burst++
			last = time.Since(began)
		}
	}
	t.Logf("the burst admitted %d within %v", burst, last)
	if burst < 8 || burst > 8+earned(2, last) {
		t.Fatalf("a burst over three processes admitted %d within %v, want the budget's 8 and %d given back",
			burst, last, earned(2, last))
	}
	var later atomic.Int64
	var wg sync.WaitGroup
	phase := time.Now()
	for _, l := range procs {
		wg.Go(func() {
			for time.Since(phase) < 4*time.Second {
				if allow(t, l, tenant).Allowed {
					later.Add(1)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	all := time.Since(began)
	if n := later.Load(); n < 7 || burst+int(n) > 8+earned(2, all) {
		t.Fatalf("%d admitted over 4 s across three processes after a burst of %d, want about 8 (2 a second) and at most %d in all within %v",
			n, burst, 8+earned(2, all), all)
	}
}

// Many callers in three processes take one tenant's budget of 8 at once. The
// budget gives a request back every 100 s, so however slow the machine the
// count does not depend on time: exactly 8 go on, as the check and the take
// are one statement.
func TestConcurrentBurstAcrossProcessesAdmitsTheBudget(t *testing.T) {
	procs := processes(t, 3, quota.Limit{Rate: 0.01, Burst: 8})
	tenant := stacktest.Name("tenant")
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for _, l := range procs {
		for range 4 {
			wg.Go(func() {
				for range 5 {
					if allow(t, l, tenant).Allowed {
						admitted.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	if n := admitted.Load(); n != 8 {
		t.Fatalf("60 requests at once over three processes admitted %d, want the budget's 8", n)
	}
}

func TestWaitHonoursItsContext(t *testing.T) {
	l := limiter(t, "events", quota.Limit{Rate: 0.1, Burst: 1})
	tenant := stacktest.Name("tenant")
	if err := l.Wait(context.Background(), tenant); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx, tenant); err == nil {
		t.Fatal("waited 10 s within a 50 ms context")
	}
}
