package sandbox_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/sandbox"
)

func newSandbox(t *testing.T) (*sandbox.Server, *provider.Client) {
	sim, c, _ := newSandboxAt(t)
	return sim, c
}

func newSandboxAt(t *testing.T) (*sandbox.Server, *provider.Client, string) {
	t.Helper()
	sim := sandbox.New(slog.New(slog.NewTextHandler(io.Discard, nil)), sandbox.Options{SearchDelay: 100 * time.Millisecond})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, provider.New(provider.Config{URL: srv.URL, APIKey: "sk_test", Timeout: 2 * time.Second}, nil), srv.URL
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

// Like Stripe, the sandbox saves the answer of every request whose execution began,
// a 500 included, and replays it to every retry of the key: after "charge, then
// 500" the card is charged and the key can never tell; after a dropped connection
// the saved answer is the success.
func TestSavedAnswersReplay(t *testing.T) {
	for _, tc := range []struct {
		name      string
		faults    sandbox.Faults
		charged   int
		retryOK   bool
		retryCode int
	}{
		{"500 after charge is saved", sandbox.Faults{FailAfter: 1}, 1, false, 500},
		{"500 before charge is saved", sandbox.Faults{FailBefore: 1}, 0, false, 500},
		{"dropped connection after charge", sandbox.Faults{DropAfter: 1}, 1, true, 0},
		{"a proxy's 503 is not saved", sandbox.Faults{Unavailable: 1}, 1, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim, c := newSandbox(t)
			sim.SetFaults(tc.faults)
			ctx := context.Background()
			if _, err := c.Charge(ctx, "k", 100, "USD", "pm_card_visa", "ord_1"); err == nil {
				t.Fatal("first attempt succeeded, want the injected failure")
			}
			for range 3 {
				_, err := c.Charge(ctx, "k", 100, "USD", "pm_card_visa", "ord_1")
				var perr *provider.Error
				switch {
				case tc.retryOK && err != nil:
					t.Fatalf("retry: %v", err)
				case !tc.retryOK && (!errors.As(err, &perr) || perr.StatusCode != tc.retryCode || !perr.Replayed || !perr.Unknown() || perr.Retryable()):
					t.Fatalf("retry: %v, want the saved %d replayed (unknown, not retryable)", err, tc.retryCode)
				}
			}
			if n := len(sim.Charges("k")); n != tc.charged {
				t.Fatalf("charges = %d, want %d", n, tc.charged)
			}
		})
	}
}

// Search finds a charge by order only after the consistency delay; a pruned key is
// new again; wrong credentials are refused without saving anything.
func TestSearchPruneAndCredentials(t *testing.T) {
	sim, c, url := newSandboxAt(t)
	ctx := context.Background()
	ch, err := c.Charge(ctx, "k", 100, "USD", "pm_card_visa", "ord_9")
	if err != nil {
		t.Fatal(err)
	}
	if found, err := c.SearchCharges(ctx, "ord_9"); err != nil || len(found) != 0 {
		t.Fatalf("search at once = %v, %v; want nothing yet", found, err)
	}
	time.Sleep(150 * time.Millisecond)
	if found, err := c.SearchCharges(ctx, "ord_9"); err != nil || len(found) != 1 || found[0].ID != ch.ID {
		t.Fatalf("search after the delay = %v, %v; want %s", found, err, ch.ID)
	}
	sim.Prune()
	if again, err := c.Charge(ctx, "k", 100, "USD", "pm_card_visa", "ord_9"); err != nil || again.ID == ch.ID {
		t.Fatalf("after pruning, the key charged %v (%v); want a new charge", again.ID, err)
	}
	sim.SetFaults(sandbox.Faults{UnauthorizedMS: 200})
	var perr *provider.Error
	if _, err := c.Charge(ctx, "k2", 100, "USD", "pm_card_visa", "ord_10"); !errors.As(err, &perr) || !perr.Unauthorized() || perr.Retryable() {
		t.Fatalf("during the credentials fault: %v, want 401", err)
	}
	time.Sleep(250 * time.Millisecond)
	if _, err := c.Charge(ctx, "k2", 100, "USD", "pm_card_visa", "ord_10"); err != nil {
		t.Fatalf("after the credentials fault, the same key: %v", err)
	}
	sim.SetFaults(sandbox.Faults{RateLimitedMS: 200})
	if _, err := c.Charge(ctx, "k3", 100, "USD", "pm_card_visa", "ord_11"); !errors.As(err, &perr) || perr.StatusCode != http.StatusTooManyRequests ||
		!perr.Retryable() || sim.RateLimited() != 1 {
		t.Fatalf("during the rate limit: %v, %d answered 429; want a retryable 429", err, sim.RateLimited())
	}
	time.Sleep(250 * time.Millisecond)
	if _, err := c.Charge(ctx, "k3", 100, "USD", "pm_card_visa", "ord_11"); err != nil {
		t.Fatalf("after the rate limit, the same key: %v", err)
	}
	// stripe-go refuses a key over 255 characters itself; the sandbox refuses it too.
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/charges", strings.NewReader("amount=100&currency=usd&source=pm_card_visa"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", strings.Repeat("k", 256))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || len(sim.Charges("")) != 4 {
		t.Fatalf("a 256-character key: %d, %d charges; want 400 and no new charge", resp.StatusCode, len(sim.Charges("")))
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
