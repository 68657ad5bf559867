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

// flood is a fleet of processes sharing the provider's budget (fleetPace at
// 10 a second) in which tenant "a" keeps requests waiting in every process,
// the fleet's workers and the API alike, so a's row is taken as fast as its
// share allows. The API's process also sends requests of lane's, one at a
// time, a quarter of a second apart.
type flood struct {
	weight    func(string) float64
	lane      string
	processes int
}

// floodSeen is what a flood saw over its minute: how long each of lane's
// requests waited for its turn, and how many of a's went out in all.
type floodSeen struct {
	waits []time.Duration
	a     int
}

const floodFor = 60 * time.Second

// turn is the time between two of the account's turns, at 10 a second. Each
// process books at most one ahead, so a request with a turn of its row waits
// at most one a process.
const turn = 100 * time.Millisecond

func (f flood) run(t *testing.T) floodSeen {
	pace := newFleetPace(10)
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	var out floodSeen
	counting := false
	var wg sync.WaitGroup
	var api http.RoundTripper
	for p := range f.processes {
		b := Budgeted(roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			if counting && TenantOf(r.Context()) == "a" {
				out.a++
			}
			mu.Unlock()
			return httptest.NewRecorder().Result(), nil
		}), pace, f.weight)
		if p == 0 {
			api = b
		}
		for range 10 {
			wg.Go(func() {
				req := httptest.NewRequest(http.MethodGet, "/v1/payment_intents/pi_a", nil).WithContext(WithTenant(ctx, "a"))
				for roundTrip(b, req) == nil {
				}
			})
		}
	}
	time.Sleep(5 * time.Second) // a's row is taken, and its share settled
	mu.Lock()
	counting = true
	mu.Unlock()
	req := httptest.NewRequest(http.MethodGet, "/v1/payment_intents/pi_b", nil).WithContext(WithTenant(ctx, f.lane))
	for end := time.Now().Add(floodFor); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		began := time.Now()
		if err := roundTrip(api, req); err != nil {
			t.Error(err)
			break
		}
		out.waits = append(out.waits, time.Since(began))
	}
	mu.Lock()
	counting = false
	mu.Unlock()
	stop()
	wg.Wait()
	time.Sleep(paceTimeout + paceRetry) // the dispatchers spend their last turns, and stop
	return out
}

// longest is the longest of waits, and mean their mean.
func longest(waits []time.Duration) (most, mean time.Duration) {
	var sum time.Duration
	for _, w := range waits {
		most = max(most, w)
		sum += w
	}
	return most, sum / time.Duration(max(len(waits), 1))
}

// A tenant whose row is taken across the fleet (its share used up by its own
// flood, in four processes) holds up no other tenant's turn: b's requests go
// out after the account's next turns, not after a turn of a's row. And a stays
// within its share, 2 a second of the 10 (weights 1 to 4), used whole.
func TestSlowTenantRowDelaysNoOtherTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := flood{weight: func(tenant string) float64 {
			if tenant == "b" {
				return 4
			}
			return 1
		}, lane: "b", processes: 4}.run(t)
		most, mean := longest(out.waits)
		t.Logf("b: %d requests, waits %s on average, %s at most; a: %d in %s", len(out.waits), mean, most, out.a, floodFor)
		if mean > turn || most > 4*turn {
			t.Errorf("b's requests waited %s on average, %s at most, behind a's row; want one of the account's turns (%s), and at most one a process", mean, most, turn)
		}
		if share := 2 * floodFor.Seconds(); float64(out.a) > share*1.05+2 || float64(out.a) < share*0.9 {
			t.Errorf("a had %d requests in %s, want its share of about %.0f", out.a, floodFor, share)
		}
	})
}

// The provider's webhooks wait in their own lane, a tenant of weight 1, so
// one tenant's flood of reads across the fleet never queues them: they go out
// after the account's next turns.
func TestWebhooksAreNotQueuedBehindATenantsFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := flood{weight: func(string) float64 { return 1 }, lane: Webhooks, processes: 3}.run(t)
		most, mean := longest(out.waits)
		t.Logf("webhooks: %d reads, waits %s on average, %s at most; a: %d in %s", len(out.waits), mean, most, out.a, floodFor)
		if mean > turn || most > 3*turn {
			t.Errorf("webhooks' reads waited %s on average, %s at most, behind a's flood; want one of the account's turns (%s), and at most one a process", mean, most, turn)
		}
		if share := 5 * floodFor.Seconds(); float64(out.a) > share*1.05+2 {
			t.Errorf("a had %d requests in %s, over its share of %.0f", out.a, floodFor, share)
		}
	})
}
