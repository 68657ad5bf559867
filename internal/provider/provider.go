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
}

func (e *Error) Error() string {
	return fmt.Sprintf("payment provider: %d %s %s: %s", e.StatusCode, e.Type, e.Code, e.Message)
}

// Declined reports a card decline: a business outcome, never worth retrying.
func (e *Error) Declined() bool { return e.StatusCode == http.StatusPaymentRequired }

// Retryable reports answers that a retry with the same key may turn into success:
// a concurrent request with the key (409), rate limiting and server errors.
func (e *Error) Retryable() bool {
	return e.StatusCode == http.StatusConflict || e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// Client calls the provider. Network errors and timeouts come back as plain errors.
type Client struct {
	base   string
	apiKey string
	hc     *http.Client
}

// New returns a client of the provider at baseURL; timeout bounds each request.
func New(baseURL, apiKey string, timeout time.Duration) *Client {
	return &Client{
		base:   strings.TrimRight(baseURL, "/"),
		apiKey: apiKey,
		hc:     &http.Client{Timeout: timeout},
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

func (c *Client) post(ctx context.Context, path, key string, form url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", key)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("POST %s: read response: %w", path, err)
	}
	if resp.StatusCode >= 300 {
		perr := &Error{StatusCode: resp.StatusCode}
		var envelope struct {
			Error *Error `json:"error"`
		}
		envelope.Error = perr
		if json.Unmarshal(body, &envelope) != nil || perr.Message == "" {
			perr.Message = strings.TrimSpace(string(body[:min(len(body), 200)]))
		}
		return perr
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("POST %s: decode response: %w", path, err)
	}
	return nil
}
