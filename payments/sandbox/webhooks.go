package sandbox

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
)

// Webhooks configure the sandbox's deliveries of its events to an endpoint, the way
// Stripe sends them and never kinder: each event at least once, every attempt
// signed afresh (Stripe-Signature, t= the attempt's time), a non-2xx answer or no
// answer retried with backoff until MaxAge; Duplicates sends each event again as
// separate deliveries, and DelayMS holds each delivery back a random time, so
// events overtake each other. The event's object is a snapshot taken when the
// event happened: stale by the time it arrives. With a state file, deliveries not
// yet done survive a restart; the endpoint's configuration (its secrets) does
// not: it is the process's, from its settings or PUT /sandbox/webhooks.
type Webhooks struct {
	URL string `json:"url"`
	// Secrets sign every delivery, one v1 signature each (Stripe signs with the old
	// and the new secret while a rotation overlaps).
	Secrets []string `json:"secrets"`
	// Duplicates is how many extra deliveries each event gets.
	Duplicates int `json:"duplicates"`
	// DelayMS holds each delivery back a random 0..DelayMS milliseconds.
	DelayMS int `json:"delay_ms"`
	// RetryMS is the first pause after a failed attempt, doubling up to a minute;
	// 0: one second (Stripe's first retry comes after minutes: the sandbox is
	// faster, never more forgiving).
	RetryMS int `json:"retry_ms"`
	// MaxAgeMS is how long an event is retried; 0: three days, as Stripe does.
	MaxAgeMS int64 `json:"max_age_ms"`
}

// maxEvents bounds the events the sandbox keeps for GET /v1/events.
const maxEvents = 10000

// WebhookStats count delivery attempts.
type WebhookStats struct {
	Attempts  int `json:"attempts"`
	Delivered int `json:"delivered"` // answered 2xx
}

// SetWebhooks replaces where and how events are delivered; events raised from then
// on use it.
func (s *Server) SetWebhooks(w Webhooks) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhooks = w
}

// WebhookStats returns the delivery counts so far.
func (s *Server) WebhookStats() WebhookStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Events returns the events raised so far, oldest first, as delivered (JSON).
func (s *Server) Events() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.events))
	copy(out, s.events)
	return out
}

// Close stops every delivery still being retried and every refund's pending
// failure; with a state file they resume when it is opened again.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.mu.Lock()
		for _, t := range s.failures {
			t.Stop()
		}
		s.mu.Unlock()
		// A failure that fired before the close writes the state still: once
		// Close returns, nothing writes it.
		s.failing.Wait()
	})
}

// delivery is one delivery of an event, pending until the endpoint answers 2xx
// or the event is MaxAge old. It is kept with the state, so a restart resumes it;
// each attempt is signed with the secrets configured then.
type delivery struct {
	ID     string          `json:"id"`
	Event  json.RawMessage `json:"event"`
	URL    string          `json:"url"`
	Next   time.Time       `json:"next"`  // when the next attempt is due
	Pause  time.Duration   `json:"pause"` // the wait after a failed attempt
	GiveUp time.Time       `json:"give_up"`
}

// emit raises an event about obj (a snapshot, copied by the caller) and queues
// its deliveries, which start once the change is committed; the caller holds
// s.mu.
func (s *Server) emit(typ string, obj any) {
	ev := map[string]any{
		"id": newID("evt"), "object": "event", "api_version": stripe.APIVersion, "created": time.Now().Unix(),
		"data": map[string]any{"object": obj}, "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil}, "type": typ,
	}
	body, err := json.Marshal(ev)
	if err != nil {
		s.logger.Error("sandbox event", "err", err)
		return
	}
	if len(s.events) == maxEvents {
		s.events = s.events[1:]
	}
	s.events = append(s.events, body)
	wh := s.webhooks
	if wh.URL == "" {
		return
	}
	pause := time.Duration(wh.RetryMS) * time.Millisecond
	if pause <= 0 {
		pause = time.Second
	}
	maxAge := time.Duration(wh.MaxAgeMS) * time.Millisecond
	if maxAge <= 0 {
		maxAge = 72 * time.Hour
	}
	now := time.Now()
	for range 1 + wh.Duplicates {
		d := &delivery{ID: newID("dlv"), Event: body, URL: wh.URL, Next: now, Pause: pause, GiveUp: now.Add(maxAge)}
		if wh.DelayMS > 0 {
			d.Next = now.Add(time.Duration(rand.IntN(wh.DelayMS+1)) * time.Millisecond) //nolint:gosec // G404: a delivery's jitter, no secret
		}
		s.deliveries[d.ID] = d
		s.outbox = append(s.outbox, d)
	}
}

// deliver attempts a delivery when it is due, until the endpoint answers 2xx or
// the event is MaxAge old.
func (s *Server) deliver(d *delivery) {
	client := &http.Client{Timeout: 20 * time.Second}
	// Close also ends an attempt under way.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		s.mu.Lock()
		wait := time.Until(d.Next)
		s.mu.Unlock()
		select {
		case <-s.closed:
			return
		case <-time.After(wait):
		}
		ok := s.attempt(ctx, client, d.Event, d.URL)
		s.mu.Lock()
		if ok || time.Now().After(d.GiveUp) {
			delete(s.deliveries, d.ID)
			s.mu.Unlock()
			return
		}
		d.Next, d.Pause = time.Now().Add(d.Pause), min(2*d.Pause, time.Minute)
		s.mu.Unlock()
	}
}

// attempt posts the event once, signed now with the secrets configured now.
func (s *Server) attempt(ctx context.Context, client *http.Client, body []byte, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	s.mu.Lock()
	secrets := s.webhooks.Secrets
	s.stats.Attempts++
	s.mu.Unlock()
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	req.Header.Set("Stripe-Signature", Sign(body, time.Now(), secrets...))
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if ok {
		s.mu.Lock()
		s.stats.Delivered++
		s.mu.Unlock()
	}
	return ok
}

// Sign is the Stripe-Signature header of payload at t: one v1 signature per secret.
func Sign(payload []byte, t time.Time, secrets ...string) string {
	parts := []string{"t=" + strconv.FormatInt(t.Unix(), 10)}
	for _, secret := range secrets {
		parts = append(parts, "v1="+hex.EncodeToString(webhook.ComputeSignature(t, payload, secret)))
	}
	return strings.Join(parts, ",")
}

func (s *Server) getWebhooks(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := map[string]any{"url": s.webhooks.URL, "duplicates": s.webhooks.Duplicates, "delay_ms": s.webhooks.DelayMS,
		"retry_ms": s.webhooks.RetryMS, "secrets": len(s.webhooks.Secrets), "stats": s.stats}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) putWebhooks(w http.ResponseWriter, r *http.Request) {
	var wh Webhooks
	if !decodeControl(w, r, "webhooks", &wh) {
		return
	}
	if wh.Duplicates < 0 || wh.Duplicates > 100 || wh.DelayMS < 0 || wh.RetryMS < 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "webhooks: duplicates 0..100, delays >= 0")
		return
	}
	s.SetWebhooks(wh)
	writeJSON(w, http.StatusOK, map[string]any{"url": wh.URL, "secrets": len(wh.Secrets)})
}

// listEvents answers GET /v1/events, newest first (limit 1..100, default 10), as
// Stripe lists them; type= narrows to one event type.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	if !s.gate(w, "") {
		return
	}
	limit := 10
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid_integer", "limit must be 1 to 100")
			return
		}
		limit = n
	}
	typ := r.URL.Query().Get("type")
	s.mu.Lock()
	var out []json.RawMessage
	for i := len(s.events) - 1; i >= 0 && len(out) < limit; i-- {
		if typ == "" || bytes.Contains(s.events[i], []byte(fmt.Sprintf(`"type":%q`, typ))) {
			out = append(out, s.events[i])
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "url": "/v1/events", "data": nonNil(out), "has_more": false})
}
