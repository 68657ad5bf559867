package provider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fleetPace is fleetrate.Shared in memory: each tenant's row at its share of
// the rate, by weight among the tenants that waited in the last 3 s, then the
// budget's own row, each a cell-rate row of burst 1 booked at most a horizon
// ahead, as the fleet's processes share them in PostgreSQL.
type fleetPace struct {
	rate    float64
	horizon time.Duration

	mu   sync.Mutex
	rows map[string]*row
	seen map[string]seen
}

type row struct {
	due   time.Time
	every time.Duration
}

type seen struct {
	weight float64
	at     time.Time
}

func newFleetPace(rate float64) *fleetPace {
	return &fleetPace{rate: rate, horizon: time.Second, rows: map[string]*row{}, seen: map[string]seen{}}
}

func (f *fleetPace) WaitTenant(ctx context.Context, tenant string, weight float64) error {
	return f.wait(ctx, "tenant:"+tenant, f.share(tenant, weight))
}

func (f *fleetPace) WaitAccount(ctx context.Context) error { return f.wait(ctx, "", f.rate) }

func (f *fleetPace) share(tenant string, weight float64) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	f.seen[tenant] = seen{weight: weight, at: now}
	total := 0.0
	for _, s := range f.seen {
		if now.Sub(s.at) < 3*time.Second {
			total += s.weight
		}
	}
	return f.rate * weight / total
}

// wait books the row's next time within the horizon, or asks again later.
func (f *fleetPace) wait(ctx context.Context, name string, rate float64) error {
	every := time.Duration(float64(time.Second) / rate)
	for {
		f.mu.Lock()
		now := time.Now()
		r := f.rows[name]
		if r == nil {
			r = &row{due: now, every: every}
			f.rows[name] = r
		}
		since := now
		if r.every == every && r.due.After(now) {
			since = r.due
		}
		booked := since.Add(every).Sub(now) <= every+f.horizon
		if booked {
			r.due, r.every = since.Add(every), every
		}
		f.mu.Unlock()
		pause := since.Sub(now)
		if !booked {
			pause = max(f.horizon/2, every)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		if booked {
			return nil
		}
	}
}

// Across a fleet of six processes sharing the provider's budget, two tenants'
// backlogs weighted 2 to 1 get the provider's requests 2 to 1, and the budget
// is used whole. Each process has orders of both tenants waiting, each order
// two requests one after another, as the workers' charges make them.
func TestFleetBudgetFollowsTheWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, processes, orders = 10, 6, 7
		pace := newFleetPace(rate)
		weight := func(tenant string) float64 {
			if tenant == "heavy" {
				return 2
			}
			return 1
		}
		ctx, stop := context.WithCancel(context.Background())
		var mu sync.Mutex
		served := map[string]int{}
		counting := false
		var wg sync.WaitGroup
		for range processes {
			b := Budgeted(roundTripFunc(func(r *http.Request) (*http.Response, error) {
				time.Sleep(50 * time.Millisecond)
				mu.Lock()
				if counting {
					served[TenantOf(r.Context())]++
				}
				mu.Unlock()
				return httptest.NewRecorder().Result(), nil
			}), pace, weight)
			for _, tenant := range []string{"heavy", "light"} {
				for range orders {
					wg.Go(func() {
						req := httptest.NewRequest(http.MethodPost, "/v1/payment_intents", nil).WithContext(WithTenant(ctx, tenant))
						for roundTrip(b, req) == nil {
						}
					})
				}
			}
		}
		time.Sleep(10 * time.Second)
		mu.Lock()
		counting = true
		mu.Unlock()
		time.Sleep(60 * time.Second)
		mu.Lock()
		counting = false
		heavy, light := served["heavy"], served["light"]
		mu.Unlock()
		stop()
		wg.Wait()
		time.Sleep(paceTimeout + paceRetry) // the dispatchers spend their last turns, and stop
		t.Logf("in 60 s: heavy %d, light %d", heavy, light)
		if share := float64(light) / float64(heavy+light); share < 0.3 || share > 0.37 {
			t.Errorf("the provider's requests split %d:%d, the lighter's share %.2f, want 1/3", heavy, light, share)
		}
		if total := heavy + light; total < 60*rate*9/10 || total > 60*rate+5 {
			t.Errorf("%d requests in 60 s at a budget of %d a second", total, rate)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
