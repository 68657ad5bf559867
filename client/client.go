// Package client calls orderflow's API the way retries stay safe: one
// Idempotency-Key per logical call, reused on every attempt; 409 (in progress),
// 429, 503 and broken connections retried after Retry-After with jitter, within
// a budget; 400, 401, 404, 409 (not cancellable, not refundable), 413, 415 and 422
// never; errors as typed problems carrying the Request-Id.
//
// It is written by hand over the OpenAPI spec (ingress/httpapi/openapi.yaml):
// seven operations, where a generated client would bring types and a dependency
// but none of the retry rules, which are the point. AllOrders and AllRefunds
// walk the list operations' pages.
//
// It is its own module, github.com/orderflow/orderflow/client, which needs
// nothing but the standard library and github.com/google/uuid: a program that
// imports it gets none of the service's dependencies.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Version is this client's release, tagged client/vVERSION; every request
// names it in its User-Agent.
const Version = "0.1.0"

// userAgent is what every request sends as User-Agent: the client, its version
// and the Go runtime, so whoever runs the API can tell clients apart.
var userAgent = "orderflow-go/" + Version + " (" + runtime.Version() + "; " + runtime.GOOS + "/" + runtime.GOARCH + ")"

// Options configure a Client; BaseURL and APIKey are required.
type Options struct {
	// BaseURL is the API's address, such as https://orders.example.com.
	BaseURL string
	// APIKey is the tenant's key (secret: never logged).
	APIKey string
	// HTTPClient sends the requests (default: one with a 60 s timeout, over
	// Prefer: wait's 30).
	HTTPClient *http.Client
	// MaxAttempts bounds the requests of one call (default 8).
	MaxAttempts int
	// MaxElapsed bounds one call's time, waits included (default 2 min): a retry
	// that would start after it is not made.
	MaxElapsed time.Duration
	// MinBackoff and MaxBackoff bound the wait before a retry the API gave no
	// Retry-After for (defaults 200 ms, 10 s): exponential, with full jitter.
	MinBackoff, MaxBackoff time.Duration
	// NewKey makes a call's Idempotency-Key when the caller gives none (default:
	// a UUIDv7).
	NewKey func() string
}

// Client is safe for concurrent use.
type Client struct {
	base *url.URL
	o    Options
}

// New checks opts and returns a Client.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(opts.BaseURL, "/"))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("client: BaseURL %q: want an absolute URL", opts.BaseURL)
	}
	if opts.APIKey == "" {
		return nil, errors.New("client: APIKey is required")
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 8
	}
	if opts.MaxElapsed <= 0 {
		opts.MaxElapsed = 2 * time.Minute
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 200 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(10*time.Second, opts.MinBackoff)
	}
	if opts.NewKey == nil {
		opts.NewKey = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	return &Client{base: u, o: opts}, nil
}

// PlaceOption changes one PlaceOrder call.
type PlaceOption func(*placeOptions)

type placeOptions struct {
	key  string
	wait time.Duration
}

// WithKey makes the call use key: the key of this logical order, the same
// whenever the caller itself starts over (a job retried, a process restarted).
func WithKey(key string) PlaceOption { return func(p *placeOptions) { p.key = key } }

// WithWait asks the API to wait up to d (at most 30 s) for the order to settle
// (Prefer: wait): Placement.Finished says whether it did.
func WithWait(d time.Duration) PlaceOption { return func(p *placeOptions) { p.wait = d } }

// PlaceOrder places an order once, however many attempts it takes. On an error
// the Placement still says the key and the attempts: retry later with WithKey and
// that key, never with a new one.
func (c *Client) PlaceOrder(ctx context.Context, req OrderRequest, opts ...PlaceOption) (*Placement, error) {
	var p placeOptions
	for _, o := range opts {
		o(&p)
	}
	if p.key == "" {
		p.key = c.o.NewKey()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("client: encode order: %w", err)
	}
	hdr := http.Header{"Idempotency-Key": {p.key}, "Content-Type": {"application/json"}}
	if p.wait > 0 {
		hdr.Set("Prefer", "wait="+strconv.Itoa(int((p.wait+time.Second-1)/time.Second)))
	}
	out := &Placement{Key: p.key}
	resp, err := c.do(ctx, http.MethodPost, "/v1/orders", body, hdr, &out.Order, &out.Attempts)
	if err != nil {
		return out, err
	}
	out.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	out.Finished = resp.StatusCode == http.StatusCreated
	out.KeyExpires, _ = http.ParseTime(resp.Header.Get("Idempotency-Key-Expires"))
	return out, nil
}

// GetOrder reads one of the tenant's orders.
func (c *Client) GetOrder(ctx context.Context, id string) (*Order, error) {
	var o Order
	if _, err := c.do(ctx, http.MethodGet, "/v1/orders/"+url.PathEscape(id), nil, nil, &o, nil); err != nil {
		return nil, err
	}
	return &o, nil
}

// CancelOrder cancels an order (refunding a paid one); cancelling it again
// answers the cancelled order, so the call retries like the others.
func (c *Client) CancelOrder(ctx context.Context, id string) (*Order, error) {
	var o Order
	if _, err := c.do(ctx, http.MethodPost, "/v1/orders/"+url.PathEscape(id)+"/cancel", nil, nil, &o, nil); err != nil {
		return nil, err
	}
	return &o, nil
}

// ListOrders reads a page of the tenant's orders.
func (c *Client) ListOrders(ctx context.Context, p ListParams) (*Page, error) {
	q := url.Values{}
	for k, v := range map[string]string{"customer_id": p.CustomerID, "status": string(p.Status), "cursor": p.Cursor,
		"idempotency_key": p.IdempotencyKey, "event_id": p.EventID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	path := "/v1/orders"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var page Page
	if _, err := c.do(ctx, http.MethodGet, path, nil, nil, &page, nil); err != nil {
		return nil, err
	}
	return &page, nil
}

// RefundOrder asks for a refund of a paid order once, however many attempts it
// takes: every attempt carries key, the Idempotency-Key of this logical refund
// (required: keep it, and send it again whenever the caller itself starts over).
// A zero RefundRequest refunds what is left of the order's charge. The refund is
// PENDING (202), or settled if the API answered with it settled; an amount over
// what is left ends FAILED, not in an error. A 409 order-not-refundable (the order
// is not PAID or PARTIALLY_REFUNDED), a 404, a 422 (key reused) are final.
func (c *Client) RefundOrder(ctx context.Context, orderID string, key string, r RefundRequest) (Refund, error) {
	if key == "" {
		return Refund{}, errors.New("client: RefundOrder needs the refund's Idempotency-Key")
	}
	body, err := json.Marshal(r)
	if err != nil {
		return Refund{}, fmt.Errorf("client: encode refund: %w", err)
	}
	hdr := http.Header{"Idempotency-Key": {key}, "Content-Type": {"application/json"}}
	var out Refund
	if _, err := c.do(ctx, http.MethodPost, "/v1/orders/"+url.PathEscape(orderID)+"/refunds", body, hdr, &out, nil); err != nil {
		return Refund{}, err
	}
	return out, nil
}

// GetRefund reads one of the tenant's refunds.
func (c *Client) GetRefund(ctx context.Context, id string) (*Refund, error) {
	var r Refund
	if _, err := c.do(ctx, http.MethodGet, "/v1/refunds/"+url.PathEscape(id), nil, nil, &r, nil); err != nil {
		return nil, err
	}
	return &r, nil
}

// ListRefunds reads a page of an order's refunds, newest first; the next page is
// p with Cursor set to the page's NextCursor, while HasMore.
func (c *Client) ListRefunds(ctx context.Context, orderID string, p RefundListParams) (*RefundPage, error) {
	q := url.Values{}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	path := "/v1/orders/" + url.PathEscape(orderID) + "/refunds"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var page RefundPage
	if _, err := c.do(ctx, http.MethodGet, path, nil, nil, &page, nil); err != nil {
		return nil, err
	}
	return &page, nil
}

// do sends the request until it is answered for good, the budget is spent or
// ctx ends; every attempt is the same request, key included.
func (c *Client) do(ctx context.Context, method, path string, body []byte, hdr http.Header, into any, attempts *int) (*http.Response, error) {
	start := time.Now()
	var n int
	if attempts == nil {
		attempts = &n
	}
	for {
		*attempts++
		resp, err := c.once(ctx, method, path, body, hdr, into)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("client: %w after %d attempts: %w", ctx.Err(), *attempts, err)
		}
		var p *Problem
		retryAfter := time.Duration(0)
		if errors.As(err, &p) {
			if !p.Retryable() {
				return nil, err
			}
			retryAfter = p.RetryAfter
		}
		wait := c.backoff(*attempts, retryAfter)
		if *attempts >= c.o.MaxAttempts || time.Since(start)+wait > c.o.MaxElapsed {
			return nil, fmt.Errorf("client: gave up after %d attempts in %s: %w", *attempts, time.Since(start).Round(time.Millisecond), err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("client: %w after %d attempts: %w", ctx.Err(), *attempts, err)
		case <-t.C:
		}
	}
}

// backoff is the wait before retry attempt+1: Retry-After and up to a quarter
// more, so clients told the same time do not return together; without it,
// exponential from MinBackoff with full jitter.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter + rand.N(retryAfter/4+1) //nolint:gosec // jitter, not a secret
	}
	ceiling := min(c.o.MaxBackoff, c.o.MinBackoff<<min(attempt-1, 20))
	return c.o.MinBackoff/2 + rand.N(ceiling-c.o.MinBackoff/2+1) //nolint:gosec // jitter, not a secret
}

// once sends one request; an answer other than 2xx is a *Problem, a transport
// failure an error.
func (c *Client) once(ctx context.Context, method, path string, body []byte, hdr http.Header, into any) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.o.APIKey)
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "application/json, application/problem+json")
	resp, err := c.o.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, strings.SplitN(path, "?", 2)[0], err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: read the answer: %w", method, strings.SplitN(path, "?", 2)[0], err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, into); err != nil {
			return nil, fmt.Errorf("client: decode the answer (request %s): %w", resp.Header.Get("Request-Id"), err)
		}
		return resp, nil
	}
	p := &Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
	_ = json.Unmarshal(raw, p) // a proxy's answer is not a problem: its status is enough
	p.Status = resp.StatusCode
	p.RequestID = resp.Header.Get("Request-Id")
	p.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	return nil, p
}

// retryAfter reads Retry-After as seconds or an HTTP-date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
