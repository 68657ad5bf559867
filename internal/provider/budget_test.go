package provider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

type recorder struct {
	mu     sync.Mutex
	served []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.served = append(r.served, tenantOf(req.Context()))
	r.mu.Unlock()
	return httptest.NewRecorder().Result(), nil
}

// One tenant's 30 waiting requests do not make another's wait behind them: the
// tokens go to the waiting tenants in turn. And the budget holds: 30 requests at
// 200 a second take at least 145 ms.
func TestBudgetIsSharedByTenantsInTurn(t *testing.T) {
	rec := &recorder{}
	b := Budgeted(rec, 200)
	send := func(tenant string, wg *sync.WaitGroup) {
		defer wg.Done()
		req := httptest.NewRequest(http.MethodPost, "/v1/payment_intents", nil).WithContext(WithTenant(context.Background(), tenant))
		if _, err := b.RoundTrip(req); err != nil {
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
	if took < 145*time.Millisecond {
		t.Fatalf("31 requests at 200/s took %s: the budget did not hold", took)
	}
}

// A request whose context ends while it waits gives up its place, and the
// others are served.
func TestBudgetWaiterGivesUp(t *testing.T) {
	rec := &recorder{}
	b := Budgeted(rec, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _ = b.RoundTrip(httptest.NewRequest(http.MethodGet, "/", nil)) // takes the first token
	if _, err := b.RoundTrip(httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)); err == nil {
		t.Fatal("a request waited past its deadline")
	}
	if _, err := b.RoundTrip(httptest.NewRequest(http.MethodGet, "/", nil)); err != nil {
		t.Fatal(err)
	}
	if len(rec.served) != 2 {
		t.Fatalf("%d served, want 2", len(rec.served))
	}
}
