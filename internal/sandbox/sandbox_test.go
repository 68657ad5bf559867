package sandbox_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/internal/sandbox"
)

func newSandbox(t *testing.T) (*sandbox.Server, *provider.Client) {
	t.Helper()
	sim := sandbox.New(slog.New(slog.NewTextHandler(io.Discard, nil)), sandbox.Faults{})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, provider.New(srv.URL, "sk_test", 2*time.Second)
}

func TestSameKeyChargesOnce(t *testing.T) {
	sim, c := newSandbox(t)
	ctx := context.Background()
	first, err := c.Charge(ctx, "k1", 2598, "USD", "pm_card_visa", "ord_1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Charge(ctx, "k1", 2598, "USD", "pm_card_visa", "ord_1")
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != again.ID {
		t.Fatalf("replay returned charge %s, first was %s", again.ID, first.ID)
	}
	if n := len(sim.Charges("k1")); n != 1 {
		t.Fatalf("charges for k1 = %d, want 1", n)
	}
	var perr *provider.Error
	_, err = c.Charge(ctx, "k1", 1, "USD", "pm_card_visa", "ord_1")
	if !errors.As(err, &perr) || perr.StatusCode != 400 || perr.Retryable() {
		t.Fatalf("same key, other amount: err = %v, want a non-retryable 400", err)
	}
}

func TestDecline(t *testing.T) {
	sim, c := newSandbox(t)
	_, err := c.Charge(context.Background(), "k", 100, "EUR", "pm_card_chargeDeclined", "ord_1")
	var perr *provider.Error
	if !errors.As(err, &perr) || !perr.Declined() || perr.Retryable() {
		t.Fatalf("err = %v, want a declined, non-retryable error", err)
	}
	if n := len(sim.Charges("")); n != 0 {
		t.Fatalf("charges = %d after a decline", n)
	}
}

func TestChargeThenFailResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults sandbox.Faults
	}{
		{"500 after charge", sandbox.Faults{FailAfter: 1}},
		{"dropped connection after charge", sandbox.Faults{DropAfter: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim, c := newSandbox(t)
			sim.SetFaults(tc.faults)
			ctx := context.Background()
			if _, err := c.Charge(ctx, "k", 100, "USD", "pm_card_visa", "ord_1"); err == nil {
				t.Fatal("first attempt succeeded, want the injected failure")
			}
			if n := len(sim.Charges("k")); n != 1 {
				t.Fatalf("charges after the failed answer = %d, want 1 (the provider charged)", n)
			}
			ch, err := c.Charge(ctx, "k", 100, "USD", "pm_card_visa", "ord_1")
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			got := sim.Charges("k")
			if len(got) != 1 || got[0].ID != ch.ID {
				t.Fatalf("after retry: charges %+v, retry got %s", got, ch.ID)
			}
		})
	}
}

func TestFailBeforeDoesNotCharge(t *testing.T) {
	sim, c := newSandbox(t)
	sim.SetFaults(sandbox.Faults{FailBefore: 2})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		_, err := c.Charge(ctx, "k", 100, "USD", "pm_card_visa", "ord_1")
		var perr *provider.Error
		if !errors.As(err, &perr) || perr.StatusCode != 500 || !perr.Retryable() {
			t.Fatalf("attempt %d: err = %v, want a retryable 500", i, err)
		}
	}
	if n := len(sim.Charges("k")); n != 0 {
		t.Fatalf("charges = %d before any success", n)
	}
	if _, err := c.Charge(ctx, "k", 100, "USD", "pm_card_visa", "ord_1"); err != nil {
		t.Fatal(err)
	}
	if n := len(sim.Charges("k")); n != 1 {
		t.Fatalf("charges = %d, want 1", n)
	}
}

func TestConcurrentSameKey(t *testing.T) {
	sim, c := newSandbox(t)
	sim.SetFaults(sandbox.Faults{LatencyMS: 200})
	var wg sync.WaitGroup
	var mu sync.Mutex
	inUse := 0
	for i := 0; i < 5; i++ {
		wg.Go(func() {
			_, err := c.Charge(context.Background(), "k", 100, "USD", "pm_card_visa", "ord_1")
			var perr *provider.Error
			if errors.As(err, &perr) && perr.StatusCode == 409 && perr.Retryable() {
				mu.Lock()
				inUse++
				mu.Unlock()
			} else if err != nil {
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	if n := len(sim.Charges("k")); n != 1 {
		t.Fatalf("charges = %d, want 1", n)
	}
	if inUse != 4 {
		t.Fatalf("409 in-use answers = %d, want 4", inUse)
	}
}

func TestRefund(t *testing.T) {
	_, c := newSandbox(t)
	ctx := context.Background()
	ch, err := c.Charge(ctx, "k", 500, "USD", "pm_card_visa", "ord_1")
	if err != nil {
		t.Fatal(err)
	}
	r1, err := c.Refund(ctx, "k/refund", ch.ID, 500)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.Refund(ctx, "k/refund", ch.ID, 500)
	if err != nil || r2.ID != r1.ID {
		t.Fatalf("refund replay = %v, %v; want %s", r2.ID, err, r1.ID)
	}
	if _, err := c.Refund(ctx, "k/refund2", ch.ID, 1); err == nil {
		t.Fatal("refunding more than the charge succeeded")
	}
}
