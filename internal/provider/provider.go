// Package provider is a client of a Stripe-like payment provider: charges and refunds
// with form-encoded bodies, amounts in minor units and an Idempotency-Key header.
package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Charge is the provider's record of a charge.
type Charge struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Status   string `json:"status"`
}

// Refund is the provider's record of a refund.
type Refund struct {
	ID     string `json:"id"`
	Charge string `json:"charge"`
	Amount int64  `json:"amount"`
	Status string `json:"status"`
}

// Error is an error answer from the provider.
type Error struct {
	StatusCode int
	Type       string `json:"type"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	// Replayed: the provider answered with the saved response of the key's first
	// request (Idempotent-Replayed: true); the same key will always get it.
	Replayed bool `json:"-"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("payment provider: %d %s %s: %s", e.StatusCode, e.Type, e.Code, e.Message)
}

// Declined reports a card decline: a business outcome, never worth retrying.
func (e *Error) Declined() bool { return e.StatusCode == http.StatusPaymentRequired }

// Unauthorized reports refused credentials (a rotated or wrong secret): nothing ran,
// and the same request may succeed once the credentials are fixed.
func (e *Error) Unauthorized() bool {
	return e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden
}

// Retryable reports answers that a retry with the same key may turn into success:
// a concurrent request with the key (409), rate limiting and server errors that are
// not a saved answer being replayed.
func (e *Error) Retryable() bool {
	return e.StatusCode == http.StatusConflict || e.StatusCode == http.StatusTooManyRequests ||
		(e.StatusCode >= 500 && !e.Replayed)
}

// Unknown reports a saved server error: the provider began the request and will
// replay its 5xx to every retry of the key, so whether it charged can only be found
// by looking the charge up.
func (e *Error) Unknown() bool { return e.StatusCode >= 500 && e.Replayed }

// Client calls the provider. Network errors and timeouts come back as plain errors.
type Client struct {
	base   string
	apiKey string
	hc     *http.Client
}

// New returns a client of the provider at baseURL; timeout bounds each request.
// transport may be nil (http.DefaultTransport); the worker passes a traced one.
func New(baseURL, apiKey string, timeout time.Duration, transport http.RoundTripper) *Client {
	return &Client{
		base:   strings.TrimRight(baseURL, "/"),
		apiKey: apiKey,
		hc:     &http.Client{Timeout: timeout, Transport: transport},
	}
}

// Charge charges amount (minor units) to the payment method token.
func (c *Client) Charge(ctx context.Context, key string, amount int64, currency, paymentMethod, orderID string) (Charge, error) {
	form := url.Values{
		"amount":             {strconv.FormatInt(amount, 10)},
		"currency":           {strings.ToLower(currency)},
		"source":             {paymentMethod},
		"metadata[order_id]": {orderID},
	}
	var ch Charge
	err := c.post(ctx, "/v1/charges", key, form, &ch)
	return ch, err
}

// Refund refunds amount (minor units) of a charge.
func (c *Client) Refund(ctx context.Context, key, chargeID string, amount int64) (Refund, error) {
	form := url.Values{"charge": {chargeID}, "amount": {strconv.FormatInt(amount, 10)}}
	var re Refund
	err := c.post(ctx, "/v1/refunds", key, form, &re)
	return re, err
}

// SearchCharges returns the charges whose metadata order_id is orderID, by the
// provider's search, which is eventually consistent: a charge made a moment ago may
// not be found yet.
func (c *Client) SearchCharges(ctx context.Context, orderID string) ([]Charge, error) {
	var page struct{ Data []Charge }
	q := url.Values{"query": {"metadata['order_id']:'" + orderID + "'"}}
	err := c.do(ctx, http.MethodGet, "/v1/charges/search?"+q.Encode(), "", nil, &page)
	return page.Data, err
}

// ListRefunds returns the refunds of a charge.
func (c *Client) ListRefunds(ctx context.Context, chargeID string) ([]Refund, error) {
	var page struct{ Data []Refund }
	err := c.do(ctx, http.MethodGet, "/v1/refunds?"+url.Values{"charge": {chargeID}}.Encode(), "", nil, &page)
	return page.Data, err
}

func (c *Client) post(ctx context.Context, path, key string, form url.Values, out any) error {
	return c.do(ctx, http.MethodPost, path, key, form, out)
}

func (c *Client) do(ctx context.Context, method, path, key string, form url.Values, out any) error {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		perr := &Error{StatusCode: resp.StatusCode, Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
		var envelope struct {
			Error *Error `json:"error"`
		}
		envelope.Error = perr
		if json.Unmarshal(raw, &envelope) != nil || perr.Message == "" {
			perr.Message = strings.TrimSpace(string(raw[:min(len(raw), 200)]))
		}
		return perr
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}
