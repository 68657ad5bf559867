package quota

import (
	"context"
	"testing"
	"time"
)

func TestLimiterPerTenant(t *testing.T) {
	l, err := NewLimiter(Limit{Rate: 0.5, Burst: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if d := l.Allow("flood"); !d.Allowed || d.Remaining != 2-i || d.Quota != 3 || d.Window != 6 {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	d := l.Allow("flood")
	if d.Allowed || d.RetryAfter < 1 || d.RetryAfter > 2 || d.Remaining != 0 || d.Reset < 5 {
		t.Fatalf("over the burst: %+v, want refused with Retry-After 1-2 s", d)
	}
	// Another tenant's bucket is its own.
	if d := l.Allow("quiet"); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("another tenant: %+v", d)
	}
	// A tenant's own limit, once loaded, replaces the default.
	l.Load(map[string]Limit{"flood": {Rate: 100, Burst: 50}})
	if d := l.Allow("flood"); !d.Allowed || d.Quota != 50 {
		t.Fatalf("after its own limit: %+v", d)
	}
}

func TestLimiterShares(t *testing.T) {
	l, err := NewLimiter(Limit{Rate: 10, Burst: 8}, 4)
	if err != nil {
		t.Fatal(err)
	}
	allowed := 0
	for range 10 {
		if l.Allow("acme").Allowed {
			allowed++
		}
	}
	if allowed != 2 {
		t.Fatalf("%d allowed at once, want the share of 8 over 4 processes: 2", allowed)
	}
	for _, bad := range []Limit{{0, 1}, {1, 0}, {-1, 5}} {
		if _, err := NewLimiter(bad, 1); err == nil {
			t.Errorf("NewLimiter(%+v) took it", bad)
		}
	}
}

func TestWaitHonoursItsContext(t *testing.T) {
	l, _ := NewLimiter(Limit{Rate: 0.1, Burst: 1}, 1)
	if err := l.Wait(context.Background(), "acme"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx, "acme"); err == nil {
		t.Fatal("waited 10 s within a 50 ms context")
	}
}
