package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
)

// threeDSOrders is how many 3-D Secure orders each half of scenario 7 pays.
const threeDSOrders = 20

// 7. 3-D Secure: the time from the customer's authentication to the order PAID,
// woken by the sandbox's webhooks, then by the poll alone (webhooks off; the
// policy's default PAYMENT_POLL_INTERVAL, 1 min). The customers of the poll half
// authenticate at random within a minute of the order asking for them, as people
// do; each half runs its orders at once.
func (b *bench) threeDSecure(ctx context.Context, webhooks bool) (Result, error) {
	name := "7b. 3-D Secure: authenticated → PAID, poll alone"
	hooks := map[string]any{"url": ""}
	if webhooks {
		name = "7a. 3-D Secure: authenticated → PAID, webhooks"
		hooks = map[string]any{"url": b.apiURL + "/webhooks/stripe", "secrets": []string{benchWebhookSecret}, "duplicates": 1, "delay_ms": 200}
	}
	if err := b.sandboxPut(ctx, "/sandbox/webhooks", hooks); err != nil {
		return Result{Scenario: name}, err
	}
	lat := make([]time.Duration, threeDSOrders)
	errs := make([]error, threeDSOrders)
	began := time.Now()
	var wg sync.WaitGroup
	for i := range threeDSOrders {
		wg.Go(func() {
			lat[i], errs[i] = b.authenticatedToPaid(ctx, fmt.Sprintf("3ds-%t-%d", webhooks, i), !webhooks)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Result{Scenario: name}, err
		}
	}
	return result(name, threeDSOrders, time.Since(began), lat), nil
}

// benchWebhookSecret signs the sandbox's webhooks to the bench's API.
const benchWebhookSecret = "whsec_bench"

// authenticatedToPaid places one 3-D Secure order, waits until it asks for its
// customer, authenticates (after a random pause of up to a minute when slow), and
// returns the time from the authentication to PAID in Postgres.
func (b *bench) authenticatedToPaid(ctx context.Context, key string, slow bool) (time.Duration, error) {
	body := strings.Replace(orderJSON, "pm_card_visa", "pm_card_authenticationRequired", 1)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.apiURL+"/v1/orders", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.apiKey)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.hc.Do(req)
	if err != nil {
		return 0, err
	}
	var v struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil {
		return 0, fmt.Errorf("POST %s: %d %w", key, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return 0, fmt.Errorf("POST %s: %d", key, resp.StatusCode)
	}
	var intent string
	if err := b.until(ctx, 2*time.Minute, func() bool {
		o, err := orderstore.New(b.pool).Get(ctx, b.tenant, v.ID)
		intent = o.PaymentRef
		return err == nil && o.Status == order.StatusActionRequired
	}); err != nil {
		return 0, fmt.Errorf("order %s never asked for its customer: %w", v.ID, err)
	}
	if slow {
		time.Sleep(time.Duration(rand.Int64N(int64(time.Minute))))
	}
	acted := time.Now()
	form := url.Values{"outcome": {"complete"}}.Encode()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, b.simURL+"/sandbox/3ds/"+intent, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if err := b.until(ctx, 3*time.Minute, func() bool { return b.paid(ctx, v.ID) }); err != nil {
		return 0, fmt.Errorf("order %s not paid: %w", v.ID, err)
	}
	return time.Since(acted), nil
}

// until polls cond every 5 ms until it holds or d passes.
func (b *bench) until(ctx context.Context, d time.Duration, cond func() bool) error {
	return b.poll(ctx, d, 5*time.Millisecond, cond)
}

// poll is until, asking every so often.
func (b *bench) poll(ctx context.Context, d, every time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
	return nil
}

// sandboxPut sends a JSON body to one of the sandbox's control endpoints.
func (b *bench) sandboxPut(ctx context.Context, path string, body any) error {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, b.simURL+path, strings.NewReader(string(data)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT %s: %d", path, resp.StatusCode)
	}
	return nil
}

// paid reports whether the bench tenant's orders ids are all PAID, asking the
// order store one at a time up to the first that is not.
func (b *bench) paid(ctx context.Context, ids ...string) bool {
	store := orderstore.New(b.pool)
	for _, id := range ids {
		if o, err := store.Get(ctx, b.tenant, id); err != nil || o.Status != order.StatusPaid {
			return false
		}
	}
	return true
}
