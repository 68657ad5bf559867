package provider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

type recorder struct {
	mu     sync.Mutex
	served []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.served = append(r.served, TenantOf(req.Context()))
	r.mu.Unlock()
	return httptest.NewRecorder().Result(), nil
}

// roundTrip passes req through rt, closing the response.
func roundTrip(rt http.RoundTripper, req *http.Request) error {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// One tenant's 30 waiting requests do not make another's wait behind them: the
// tokens go to the waiting tenants in turn. And the budget holds: 31 requests at
// 50 a second take at least 580 ms. (At 200 a second, a token every 5 ms, a
// busy machine that started the quiet tenant's goroutine late let the flood
// have the tokens meanwhile: 20 ms a token leaves room for that.)
func TestBudgetIsSharedByTenantsInTurn(t *testing.T) {
	rec := &recorder{}
	b := Budgeted(rec, Everyone(rate.NewLimiter(50, 1)), nil)
	send := func(tenant string, wg *sync.WaitGroup) {
		defer wg.Done()
		req := httptest.NewRequest(http.MethodPost, "/v1/payment_intents", nil).WithContext(WithTenant(context.Background(), tenant))
		if err := roundTrip(b, req); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	began := time.Now()
	for range 30 {
		wg.Add(1)
		go send("flood", &wg)
	}
	for {
		rec.mu.Lock()
		n := len(rec.served)
		rec.mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	wg.Add(1)
	go send("quiet", &wg)
	wg.Wait()
	took := time.Since(began)
	pos := -1
	for i, tenant := range rec.served {
		if tenant == "quiet" {
			pos = i
		}
	}
	if pos < 0 || pos > 6 {
		t.Fatalf("the quiet tenant's request was served %dth of %d: %v", pos+1, len(rec.served), rec.served)
	}
	if took < 580*time.Millisecond {
		t.Fatalf("31 requests at 50/s took %s: the budget did not hold", took)
	}
}

// A request whose context ends while it waits gives up its place, and the
// others are served.
func TestBudgetWaiterGivesUp(t *testing.T) {
	rec := &recorder{}
	b := Budgeted(rec, Everyone(rate.NewLimiter(5, 1)), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = roundTrip(b, httptest.NewRequest(http.MethodGet, "/", nil)) // takes the first token
	if err := roundTrip(b, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)); err == nil {
		t.Fatal("a request waited past its deadline")
	}
	if err := roundTrip(b, httptest.NewRequest(http.MethodGet, "/", nil)); err != nil {
		t.Fatal(err)
	}
	if len(rec.served) != 2 {
		t.Fatalf("%d served, want 2", len(rec.served))
	}
}

// Two tenants with waiting requests share the turns by their weights, 2 to 1,
// and a pace that cannot be read gives no turn until it can.
func TestBudgetFollowsTheWeights(t *testing.T) {
	rec := &recorder{}
	pace := &flaky{Limiter: rate.NewLimiter(1000, 1), fail: 2}
	b := Budgeted(rec, Everyone(pace), func(tenant string) float64 {
		if tenant == "heavy" {
			return 2
		}
		return 1
	})
	var wg sync.WaitGroup
	for _, tenant := range []string{"heavy", "light"} {
		for range 60 {
			wg.Go(func() {
				req := httptest.NewRequest(http.MethodPost, "/v1/refunds", nil).WithContext(WithTenant(context.Background(), tenant))
				if err := roundTrip(b, req); err != nil {
					t.Error(err)
				}
			})
		}
	}
	time.Sleep(paceRetry / 2)
	rec.mu.Lock()
	early := len(rec.served)
	rec.mu.Unlock()
	if early != 0 {
		t.Fatalf("%d requests went out while the pace could not be read", early)
	}
	wg.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	heavy := 0
	for _, tenant := range rec.served[:60] {
		if tenant == "heavy" {
			heavy++
		}
	}
	if heavy < 36 || heavy > 44 {
		t.Fatalf("heavy had %d of the first 60 turns, want about 40 (weights 2 to 1): %v", heavy, rec.served)
	}
	if pace.failed != 2 {
		t.Fatalf("the pace failed %d times, want 2", pace.failed)
	}
}

// flaky is a pace whose first reads fail.
type flaky struct {
	*rate.Limiter
	mu           sync.Mutex
	fail, failed int
}

func (f *flaky) Wait(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed < f.fail {
		f.failed++
		return context.DeadlineExceeded
	}
	return f.Limiter.Wait(ctx)
}
