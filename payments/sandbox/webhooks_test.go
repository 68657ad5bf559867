package sandbox_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/sandbox"
)

// receiver is a webhook endpoint that verifies each delivery with stripe-go, as a
// Stripe integration does, and answers failFirst non-2xx before accepting.
type receiver struct {
	mu        sync.Mutex
	secret    string
	failFirst int
	attempts  int
	events    []stripe.Event
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ev, err := webhook.ConstructEvent(body, r.Header.Get("Stripe-Signature"), rc.secret)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.attempts++
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rc.attempts <= rc.failFirst {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	rc.events = append(rc.events, ev)
}

func (rc *receiver) types() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, ev := range rc.events {
		out = append(out, string(ev.Type))
	}
	return out
}

func threeDS(t *testing.T, returnURL string) (*sandbox.Server, *provider.Client, string) {
	t.Helper()
	sim := sandbox.New(slog.New(slog.NewTextHandler(io.Discard, nil)), sandbox.Options{})
	t.Cleanup(sim.Close)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, provider.New(provider.Config{URL: srv.URL, Timeout: 2 * time.Second, ReturnURL: returnURL}, nil), srv.URL
}

func authenticate(t *testing.T, base, id, outcome string) {
	t.Helper()
	resp, err := http.PostForm(base+"/sandbox/3ds/"+id, url.Values{"outcome": {outcome}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("authenticate %s: %d", outcome, resp.StatusCode)
	}
}

// A card that needs 3-D Secure: the confirm leaves the intent requires_action with
// the redirect; completed, it is charged once; failed, it needs another payment
// method with Stripe's code.
func TestThreeDSecureCards(t *testing.T) {
	sim, c, base := threeDS(t, "https://shop.example/back")
	ctx := context.Background()
	for _, row := range []struct {
		outcome, status, declined string
		charges                   int
	}{
		{"complete", "succeeded", "", 1},
		{"fail", "requires_payment_method", "payment_intent_authentication_failure", 0},
	} {
		pi, err := c.CreateIntent(ctx, "create-"+row.outcome, 1000, "eur", "pm_card_authenticationRequired", map[string]string{"order_id": "ord_" + row.outcome})
		if err != nil {
			t.Fatal(err)
		}
		pi, err = c.ConfirmIntent(ctx, "confirm-"+row.outcome, pi.ID)
		if err != nil {
			t.Fatal(err)
		}
		na := pi.NextAction
		if pi.Status != "requires_action" || na == nil || na.Type != "redirect_to_url" ||
			!strings.HasSuffix(na.RedirectURL, "/sandbox/3ds/"+pi.ID) || na.ReturnURL != "https://shop.example/back" ||
			!strings.HasPrefix(na.ClientSecret, pi.ID+"_secret_") {
			t.Fatalf("confirmed: %+v next action %+v", pi, na)
		}
		if _, err := c.ConfirmIntent(ctx, "confirm-again-"+row.outcome, pi.ID); err == nil {
			t.Fatal("a second confirm of an intent waiting on its customer was accepted")
		}
		authenticate(t, base, pi.ID, row.outcome)
		got, err := c.RetrieveIntent(ctx, pi.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != row.status || got.Declined != row.declined || got.NextAction != nil {
			t.Fatalf("%s: %+v", row.outcome, got)
		}
		if n := len(sim.ChargesForOrder("ord_" + row.outcome)); n != row.charges {
			t.Fatalf("%s: %d charges", row.outcome, n)
		}
		resp, err := http.PostForm(base+"/sandbox/3ds/"+pi.ID, url.Values{"outcome": {"complete"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("a second authentication: %d", resp.StatusCode)
		}
	}
}

// Without a return URL the next action is Stripe.js's, with the client secret.
func TestThreeDSecureWithoutReturnURL(t *testing.T) {
	_, c, _ := threeDS(t, "")
	ctx := context.Background()
	pi, err := c.CreateIntent(ctx, "k1", 1000, "eur", "pm_card_threeDSecure2Required", nil)
	if err != nil {
		t.Fatal(err)
	}
	pi, err = c.ConfirmIntent(ctx, "k2", pi.ID)
	if err != nil || pi.NextAction == nil || pi.NextAction.Type != "use_stripe_sdk" || pi.NextAction.ClientSecret == "" {
		t.Fatalf("%+v %v", pi, err)
	}
}

// Every change raises an event; each is delivered signed (stripe-go verifies it),
// retried after non-2xx answers, and delivered again as duplicates.
func TestWebhooksAreSignedRetriedAndDuplicated(t *testing.T) {
	sim, c, base := threeDS(t, "")
	rc := &receiver{secret: "whsec_test", failFirst: 3}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	sim.SetWebhooks(sandbox.Webhooks{URL: hook.URL, Secrets: []string{"whsec_old", "whsec_test"}, Duplicates: 1, RetryMS: 20, DelayMS: 50})
	ctx := context.Background()
	pi, err := c.CreateIntent(ctx, "k1", 1000, "eur", "pm_card_authenticationRequired", map[string]string{"order_id": "ord_1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConfirmIntent(ctx, "k2", pi.ID); err != nil {
		t.Fatal(err)
	}
	authenticate(t, base, pi.ID, "complete")
	// created, requires_action, charge.succeeded, succeeded: four events, twice each.
	deadline := time.Now().Add(10 * time.Second)
	for len(rc.types()) < 8 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	count := map[string]int{}
	for _, typ := range rc.types() {
		count[typ]++
	}
	want := map[string]int{"payment_intent.created": 2, "payment_intent.requires_action": 2, "charge.succeeded": 2, "payment_intent.succeeded": 2}
	for typ, n := range want {
		if count[typ] != n {
			t.Fatalf("deliveries %v, want %v", count, want)
		}
	}
	// The receiver records a delivery before its answer reaches the sandbox.
	for st := sim.WebhookStats(); st.Delivered < 8 && time.Now().Before(deadline); st = sim.WebhookStats() {
		time.Sleep(20 * time.Millisecond)
	}
	if st := sim.WebhookStats(); st.Attempts != 8+3 || st.Delivered != 8 {
		t.Fatalf("stats %+v, want 11 attempts (3 refused) and 8 deliveries", st)
	}
	// The event's object is the intent as it was when the event happened.
	for _, ev := range rc.events {
		if ev.Type == "payment_intent.requires_action" {
			var obj map[string]any
			if err := json.Unmarshal(ev.Data.Raw, &obj); err != nil || obj["status"] != "requires_action" {
				t.Fatalf("requires_action event's object: %v %v", obj, err)
			}
		}
	}
}

// A delivery the endpoint never accepts is retried until MaxAge, then dropped.
func TestWebhooksGiveUpAfterMaxAge(t *testing.T) {
	sim, c, _ := threeDS(t, "")
	var attempts atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		attempts.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(hook.Close)
	sim.SetWebhooks(sandbox.Webhooks{URL: hook.URL, Secrets: []string{"s"}, RetryMS: 10, MaxAgeMS: 300})
	if _, err := c.CreateIntent(context.Background(), "k1", 1000, "eur", "pm_card_visa", nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	n := attempts.Load()
	time.Sleep(500 * time.Millisecond)
	if n < 3 || attempts.Load() != n {
		t.Fatalf("%d attempts, then %d: want retries, then none past max age", n, attempts.Load())
	}
}
