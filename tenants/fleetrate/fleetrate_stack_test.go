//go:build stack

package fleetrate_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/tenants/fleetrate"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// Six processes (pools of their own), four callers each, wait on one budget of
// 40 a second with a burst of 4 for three seconds: no two-second window admits
// more than 2 x 40 + 4, within 10% (the times are the callers' wake-ups, which a
// busy machine delays and bunches), and the budget is used (at least 90% of it).
// Six budgets of a process each would admit six times as much.
func TestWaitHoldsOneRateAcrossProcesses(t *testing.T) {
	stacktest.Pool(t) // migrated
	env := stacktest.Env(t)
	name, lim := stacktest.Name("budget"), fleetrate.Limit{Rate: 40, Burst: 4}
	// The processes are up, their connections open, before the three seconds
	// start: opening six pools on a busy machine took half a second of them.
	var fleet []*fleetrate.Rates
	for range 6 {
		pool, err := database.Open(context.Background(), env["DATABASE_URL"], 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		warm(t, pool, 4)
		fleet = append(fleet, fleetrate.New(pool))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var mu sync.Mutex
	var admitted []time.Time
	var wg sync.WaitGroup
	for _, rates := range fleet {
		for range 4 {
			wg.Go(func() {
				for rates.Wait(ctx, name, lim, time.Second) == nil {
					mu.Lock()
					admitted = append(admitted, time.Now())
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	slices.SortFunc(admitted, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, at := range admitted {
		j, _ := slices.BinarySearchFunc(admitted, at.Add(2*time.Second), func(a, b time.Time) int { return a.Compare(b) })
		most = max(most, j-i)
	}
	t.Logf("%d admitted in 3 s; at most %d in any two seconds", len(admitted), most)
	if most > (2*40+4)*11/10 {
		t.Errorf("%d admitted within two seconds, over 2 x 40 + 4 and 10%%", most)
	}
	if len(admitted) < 108 {
		t.Errorf("%d admitted in 3 s, want at least 90%% of 120", len(admitted))
	}
}

// Processes that disagree on a row's rate (a tenant's share of a shared
// budget, read by each at its own time while tenants come and go) wait on it
// at 10 and 5 a second, turn about, for three seconds: the row admits no more
// than the faster rate would (30, and its burst and horizon). A row that
// started afresh at each change of rate admitted every request at once.
func TestARateThatChangesKeepsTheTurnsTaken(t *testing.T) {
	pool := stacktest.Pool(t)
	rates := fleetrate.New(pool)
	name := stacktest.Name("budget")
	limits := []fleetrate.Limit{{Rate: 10, Burst: 1}, {Rate: 5, Burst: 1}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for _, lim := range limits {
		for range 4 {
			wg.Go(func() {
				for rates.Wait(ctx, name, lim, time.Second) == nil {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	t.Logf("%d admitted in 3 s at 10 and 5 a second", admitted)
	if admitted > 30+1+10 {
		t.Errorf("%d admitted in 3 s, over the faster rate's 30, its burst and a second ahead", admitted)
	}
	if admitted < 15 {
		t.Errorf("%d admitted in 3 s, fewer than the slower rate's 15", admitted)
	}
}

// Take admits the burst, then refuses with the time until the next request,
// counting down what remains; Wait and Take share the budget.
func TestTakeRefusesPastTheBurst(t *testing.T) {
	rates := fleetrate.New(stacktest.Pool(t))
	ctx := context.Background()
	name, lim := stacktest.Name("budget"), fleetrate.Limit{Rate: 1, Burst: 5}
	var allowed []int
	for range 8 {
		d, err := rates.Take(ctx, name, lim)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed = append(allowed, d.Remaining)
			continue
		}
		if d.RetryAfter <= 0 || d.RetryAfter > time.Second || d.Reset < 4*time.Second || d.Reset > 5*time.Second {
			t.Errorf("refused with RetryAfter %s, Reset %s; want (0, 1s] and about 5s", d.RetryAfter, d.Reset)
		}
	}
	if !slices.Equal(allowed, []int{4, 3, 2, 1, 0}) {
		t.Errorf("allowed with remaining %v, want [4 3 2 1 0]", allowed)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := rates.Wait(short, name, lim, 10*time.Second); err == nil {
		t.Error("Wait went through a budget Take had emptied")
	}
}

// Two tenants weighted 2 to 1 wait on one shared budget of 30 a second from
// three processes, each process holding requests of both: over three seconds
// the heavier gets about two thirds (within 20% of it), and the whole stays
// within the budget.
func TestSharedSplitsByWeightAcrossProcesses(t *testing.T) {
	stacktest.Pool(t) // migrated
	env := stacktest.Env(t)
	name, lim := stacktest.Name("budget"), fleetrate.Limit{Rate: 30, Burst: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range 3 {
		pool, err := database.Open(context.Background(), env["DATABASE_URL"], 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		shared := fleetrate.New(pool).Shared(name, lim, time.Second)
		for _, tenant := range []string{"heavy", "light"} {
			weight := map[string]float64{"heavy": 2, "light": 1}[tenant]
			wg.Go(func() {
				for shared.Wait(ctx, tenant, weight) == nil {
					mu.Lock()
					got[tenant]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	total := got["heavy"] + got["light"]
	t.Logf("heavy %d, light %d in 3 s", got["heavy"], got["light"])
	if total > 30*3+3 {
		t.Errorf("%d admitted in 3 s, over the budget of 90", total)
	}
	if share := float64(got["heavy"]) / float64(total); share < 2.0/3*0.8 || share > 2.0/3*1.2 {
		t.Errorf("heavy had %.2f of the budget, want 2/3 within 20%%", share)
	}
}

// warm opens n connections of pool, so the first requests on it wait for none.
func warm(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	var held []*pgxpool.Conn
	for range n {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}
}
