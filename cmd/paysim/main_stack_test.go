//go:build stack

package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// paysim SIGKILLed right after it answered: started again on its state file, it
// has the intent it charged and the confirm's saved answer; a state file that is
// not whole stops it from starting.
func TestSandboxKilledKeepsWhatItAnswered(t *testing.T) {
	bin := stacktest.Binary(t, "cmd/paysim")
	addr, state := stacktest.FreeAddr(t), filepath.Join(t.TempDir(), "state.json")
	env := map[string]string{"PAYSIM_ADDR": addr, "PAYSIM_STATE": state, "LOG_LEVEL": "warn"}
	start := func() *stacktest.Proc {
		p := stacktest.Start(t, bin, env)
		stacktest.Eventually(t, 30*time.Second, "the sandbox to listen", func() bool {
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		return p
	}
	c := provider.New(provider.Config{URL: "http://" + addr, APIKey: "sk_test", Timeout: 5 * time.Second}, nil)
	ctx := context.Background()
	md := map[string]string{"order_id": "ord_1"}
	p := start()
	pi, err := c.CreateIntent(ctx, "create-1", 1000, "EUR", "pm_card_visa", md)
	if err != nil {
		t.Fatal(err)
	}
	paid, err := c.ConfirmIntent(ctx, "confirm-1", pi.ID)
	if err != nil {
		t.Fatal(err)
	}
	p.Kill(t)

	p = start()
	if got, err := c.RetrieveIntent(ctx, pi.ID); err != nil || got.Status != "succeeded" || got.Charge != paid.Charge {
		t.Fatalf("the intent after SIGKILL: %+v, %v", got, err)
	}
	if again, err := c.ConfirmIntent(ctx, "confirm-1", pi.ID); err != nil || again.Charge != paid.Charge {
		t.Fatalf("the confirm's key after SIGKILL: %+v, %v", again, err)
	}
	p.Kill(t)

	raw, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, raw[:len(raw)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if code := stacktest.Start(t, bin, env).Wait(t, 30*time.Second); code == 0 {
		t.Fatal("the sandbox started on a state file cut short")
	}
}
