package webhooks

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stripe/stripe-go/v82"

	"github.com/orderflow/orderflow/payments/provider"
)

// Unsigned bodies are read MaxReading at a time: a sender that holds its body
// keeps one place, the next over the budget is told to come back without a byte
// of its body read, and a place given back is taken again.
func TestUnsignedBodiesHaveABudget(t *testing.T) {
	h, err := New(Deps{Secrets: []string{"whsec_test"}, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	var held []*io.PipeWriter
	var wg sync.WaitGroup
	codes := make(chan int, MaxReading)
	for range MaxReading {
		pr, pw := io.Pipe()
		held = append(held, pw)
		req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", pr)
		wg.Go(func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			codes <- rec.Code
		})
	}
	for len(h.reading) < MaxReading {
		time.Sleep(time.Millisecond)
	}
	over := httptest.NewRecorder()
	body := &countingReader{r: strings.NewReader(`{"id":"evt_1"}`)}
	h.ServeHTTP(over, httptest.NewRequest(http.MethodPost, "/webhooks/stripe", body))
	if over.Code != http.StatusServiceUnavailable || over.Header().Get("Retry-After") == "" || body.n != 0 {
		t.Fatalf("over the budget: %d, Retry-After %q, %d bytes read; want 503 with Retry-After, nothing read", over.Code, over.Header().Get("Retry-After"), body.n)
	}
	held[0].Close()
	if code := <-codes; code != http.StatusBadRequest {
		t.Fatalf("an unsigned body: %d, want 400", code)
	}
	again := httptest.NewRecorder()
	h.ServeHTTP(again, httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader(`{"id":"evt_1"}`)))
	if again.Code != http.StatusBadRequest {
		t.Fatalf("with a place given back: %d, want 400 (read, then refused for its signature)", again.Code)
	}
	for _, pw := range held[1:] {
		pw.Close()
	}
	wg.Wait()
	// A declared length over the cap is refused before it is read.
	big := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader("x"))
	big.ContentLength = MaxBodyBytes + 1
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, big)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a declared %d bytes: %d, want 413", big.ContentLength, rec.Code)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// An event's intent is read in the webhooks' own lane of the provider budget,
// never as a tenant's request or an untenanted one, whichever tenant's request
// the event arrived beside.
func TestWebhookReadsIntentInItsOwnLane(t *testing.T) {
	intents := &laneIntents{}
	h := &Handler{Deps: Deps{Intents: intents}}
	ev := stripe.Event{Data: &stripe.EventData{Object: map[string]any{"object": "payment_intent", "id": "pi_123"}}}
	_, outcome, err := h.handle(provider.WithTenant(context.Background(), "acme"), ev)
	if err != nil || outcome != UnknownIntent {
		t.Fatalf("handle: %q, %v; want %q", outcome, err, UnknownIntent)
	}
	if len(intents.lanes) != 1 || intents.lanes[0] != provider.Webhooks {
		t.Fatalf("the intent was read in lanes %q, want once in %q", intents.lanes, provider.Webhooks)
	}
}

// laneIntents records the budget lane of each read, and knows no intent.
type laneIntents struct{ lanes []string }

func (l *laneIntents) RetrieveIntent(ctx context.Context, _ string) (provider.Intent, error) {
	l.lanes = append(l.lanes, provider.TenantOf(ctx))
	return provider.Intent{}, &provider.Error{StatusCode: http.StatusNotFound}
}
