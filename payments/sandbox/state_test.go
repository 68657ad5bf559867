package sandbox_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/sandbox"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// open starts a sandbox on the state file at path, served until the test ends or
// stop is called: a restart is stop, then open again.
func open(t *testing.T, path string, o sandbox.Options) (sim *sandbox.Server, c *provider.Client, stop func()) {
	t.Helper()
	sim, err := sandbox.Open(quiet(), o, path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	stop = func() { srv.Close(); sim.Close() }
	t.Cleanup(stop)
	return sim, provider.New(provider.Config{URL: srv.URL, APIKey: "sk_test", Timeout: 2 * time.Second}, nil), stop
}

// A restart forgets nothing: the intent, its charge, the refund, and every key's
// saved answer (a retry gets the first answer, and moves no money again).
func TestStateSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	_, c, stop := open(t, path, sandbox.Options{})
	ctx := context.Background()
	md := map[string]string{"order_id": "ord_1", "orderflow_refund_key": "refund-1"}
	pi, err := c.CreateIntent(ctx, "create-1", 1000, "EUR", "pm_card_visa", orderMeta)
	if err != nil {
		t.Fatal(err)
	}
	paid, err := c.ConfirmIntent(ctx, "confirm-1", pi.ID)
	if err != nil || paid.Status != "succeeded" {
		t.Fatalf("confirm: %+v, %v", paid, err)
	}
	re, err := c.RefundIntent(ctx, "refund-1", pi.ID, 300, md)
	if err != nil {
		t.Fatal(err)
	}
	stop()

	sim, c, _ := open(t, path, sandbox.Options{})
	got, err := c.RetrieveIntent(ctx, pi.ID)
	if err != nil || got.Status != "succeeded" || got.Charge != paid.Charge || got.Received != 1000 {
		t.Fatalf("the intent after a restart: %+v, %v", got, err)
	}
	charges := sim.ChargesForOrder("ord_1")
	if len(charges) != 1 || charges[0].ID != paid.Charge || charges[0].AmountRefunded != 300 {
		t.Fatalf("charges after a restart: %+v", charges)
	}
	refunds, err := c.IntentRefunds(ctx, pi.ID)
	if err != nil || len(refunds) != 1 || refunds[0].ID != re.ID || refunds[0].Amount != 300 || refunds[0].Metadata["orderflow_refund_key"] != "refund-1" {
		t.Fatalf("refunds after a restart: %+v, %v", refunds, err)
	}
	// The same keys again: their saved answers, nothing new.
	if again, err := c.CreateIntent(ctx, "create-1", 1000, "EUR", "pm_card_visa", orderMeta); err != nil || again.ID != pi.ID {
		t.Fatalf("create replayed after a restart: %+v, %v", again, err)
	}
	if again, err := c.ConfirmIntent(ctx, "confirm-1", pi.ID); err != nil || again.Charge != paid.Charge {
		t.Fatalf("confirm replayed after a restart: %+v, %v", again, err)
	}
	if again, err := c.RefundIntent(ctx, "refund-1", pi.ID, 300, md); err != nil || again.ID != re.ID {
		t.Fatalf("refund replayed after a restart: %+v, %v", again, err)
	}
	if n, m, k := len(sim.Intents("ord_1")), len(sim.Charges("")), len(sim.Refunds()); n != 1 || m != 1 || k != 1 {
		t.Fatalf("after the replays: %d intents, %d charges, %d refunds; want one each", n, m, k)
	}
}

// A delivery still being retried when the sandbox stops is delivered after it
// starts again, signed with the secret configured then.
func TestPendingDeliveriesSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	sim, c, stop := open(t, path, sandbox.Options{})
	rc := &receiver{secret: "whsec_test"}
	var up atomic.Bool
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		rc.ServeHTTP(w, r)
	}))
	t.Cleanup(hook.Close)
	sim.SetWebhooks(sandbox.Webhooks{URL: hook.URL, Secrets: []string{"whsec_test"}, RetryMS: 100})
	if _, err := c.CreateIntent(context.Background(), "create-1", 1000, "EUR", "pm_card_visa", orderMeta); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a refused attempt", func() bool { return sim.WebhookStats().Attempts > 0 })
	stop()

	// The endpoint's configuration is not kept (it holds secrets): the process
	// gives it again; the delivery still goes where it was addressed.
	sim, _, _ = open(t, path, sandbox.Options{})
	sim.SetWebhooks(sandbox.Webhooks{Secrets: []string{"whsec_test"}})
	up.Store(true)
	waitFor(t, "the pending delivery", func() bool { return len(rc.types()) == 1 })
	if got := rc.types(); got[0] != "payment_intent.created" {
		t.Fatalf("delivered %v", got)
	}
}

// A state file that is not whole is refused, never read as an empty sandbox, and
// left as it was.
func TestCorruptStateIsRefused(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "state.json")
	_, c, stop := open(t, good, sandbox.Options{})
	if _, err := c.CreateIntent(context.Background(), "create-1", 1000, "EUR", "pm_card_visa", orderMeta); err != nil {
		t.Fatal(err)
	}
	stop()
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"empty":     "",
		"cut short": string(whole[:len(whole)/2]),
		"changed":   strings.Replace(string(whole), `"amount":1000`, `"amount":9000`, 1),
		"not ours":  `{"format":"other/1","sha256":"","state":{}}`,
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := sandbox.Open(quiet(), sandbox.Options{}, path); err == nil {
			t.Errorf("%s: opened", name)
		}
		if after, _ := os.ReadFile(path); string(after) != content {
			t.Errorf("%s: the file was changed", name)
		}
	}
}

// waitFor polls cond every 10 ms, for 10 s at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
