// Package provider is orderflow's client of the payment provider, Stripe, through
// its official library stripe-go: PaymentIntents and their refunds, and the Charges
// API only for runs started before PaymentIntents. Every write carries the
// caller's idempotency key; the library's own network retries are off, because
// retries belong to the workflow, which keeps the key across them.
package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/orderflow/orderflow/platform/redact"
)

// APIVersion is the Stripe API version every request is pinned to (stripe-go sends
// its own as Stripe-Version; the library's version pins it).
const APIVersion = stripe.APIVersion

// DefaultTimeout is how long one request may take: Stripe's own libraries wait 80 s.
const DefaultTimeout = 80 * time.Second

// Intent is a PaymentIntent as orderflow reads it.
type Intent struct {
	ID     string
	Status string // requires_confirmation, processing, succeeded, requires_payment_method, requires_action, canceled...
	Amount int64
	// Received is what the intent has collected; Charge the ID of its latest charge.
	Received int64
	Charge   string
	Metadata map[string]string
	// Declined is the decline code of its last failed attempt ("" for none).
	Declined string
	// NextAction is what the customer must do, while the intent requires_action.
	NextAction *NextAction
}

// NextAction is where a client sends its customer to authenticate a payment:
// Stripe's redirect (when the confirm named a return URL) or the client secret
// that Stripe.js completes the intent with. Never a card.
type NextAction struct {
	Type         string `json:"type"` // redirect_to_url or use_stripe_sdk
	RedirectURL  string `json:"redirect_url,omitempty"`
	ReturnURL    string `json:"return_url,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
}

// Refund is the provider's record of a refund.
type Refund struct {
	ID       string
	Charge   string
	Intent   string
	Amount   int64
	Status   string
	Metadata map[string]string
	// FailureReason says why a refund failed (status failed), as the provider
	// names it: expired_or_canceled_card, lost_or_stolen_card, unknown.
	FailureReason string
}

// Charge is the provider's record of a charge (the Charges API's, or an intent's).
type Charge struct {
	ID       string
	Amount   int64
	Currency string
	Status   string
	// Refunded is how much of it was refunded, by anyone; Disputed whether the
	// cardholder's bank disputes it.
	Refunded int64
	Disputed bool
	Intent   string
	Metadata map[string]string
	Created  time.Time
}

// Error is an error answer from the provider.
type Error struct {
	StatusCode int
	Type       string
	Code       string
	Message    string
	// Replayed: the provider answered with the saved response of the key's first
	// request (Idempotent-Replayed: true); the same key will always get it.
	Replayed bool
	// Intent is the PaymentIntent the error is about, when the provider says (a
	// declined confirm carries it).
	Intent *Intent
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

// InUse reports a request with the key still running at the provider: its answer
// is not known yet, and the same key will get it.
func (e *Error) InUse() bool { return e.StatusCode == http.StatusConflict }

// UnexpectedState reports a request the intent's state refuses, such as a confirm
// of an intent that already succeeded: the intent itself says what happened.
func (e *Error) UnexpectedState() bool { return e.Code == "payment_intent_unexpected_state" }

// KeyReused reports a key the provider took first with other parameters (a
// retry whose request changed, such as its return URL after a deploy): what the
// key did is read from the object, never assumed.
func (e *Error) KeyReused() bool {
	return e.Type == "idempotency_error" && e.StatusCode == http.StatusBadRequest
}

// Retryable reports answers that a retry with the same key may turn into success:
// a concurrent request with the key (409), rate limiting and server errors that are
// not a saved answer being replayed.
func (e *Error) Retryable() bool {
	return e.InUse() || e.StatusCode == http.StatusTooManyRequests || (e.StatusCode >= 500 && !e.Replayed)
}

// Unknown reports a saved server error: the provider began the request and will
// replay its 5xx to every retry of the key, so what it did can only be found by
// reading the object it acted on.
func (e *Error) Unknown() bool { return e.StatusCode >= 500 && e.Replayed }

// Client calls the provider. Network errors and timeouts come back as plain errors.
type Client struct {
	sc        *stripe.Client
	returnURL string
}

// Config is how to reach the provider.
type Config struct {
	URL     string // Stripe's is https://api.stripe.com
	APIKey  string // secret: never logged
	Timeout time.Duration
	// ReturnURL is where the provider sends a customer back after authenticating
	// (3-D Secure); with it, an intent that requires action names a redirect URL.
	// It is one of the confirm's parameters, so a confirm retried with its key after
	// it changed is refused (nothing is charged).
	ReturnURL string
	// Rate is the account's rate limit, requests a second, held across every
	// process that calls the provider (PAYMENTS_RATE); 0 for none.
	Rate int
}

// New returns a client of the provider; transport may be nil
// (http.DefaultTransport); the worker passes a traced one.
func New(c Config, transport http.RoundTripper) *Client {
	cfg := &stripe.BackendConfig{
		URL:               stripe.String(strings.TrimRight(c.URL, "/")),
		HTTPClient:        &http.Client{Timeout: c.Timeout, Transport: transport},
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		EnableTelemetry:   stripe.Bool(false),
	}
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, cfg)
	return &Client{returnURL: c.ReturnURL, sc: stripe.NewClient(c.APIKey, stripe.WithBackends(&stripe.Backends{
		API: backend, Connect: backend, Uploads: backend, MeterEvents: backend,
	}))}
}

// CreateIntent creates the order's PaymentIntent for a card payment method,
// unconfirmed: it moves no money until ConfirmIntent.
func (c *Client) CreateIntent(ctx context.Context, key string, amount int64, currency, paymentMethod string, metadata map[string]string) (Intent, error) {
	p := &stripe.PaymentIntentCreateParams{
		Amount: stripe.Int64(amount), Currency: stripe.String(strings.ToLower(currency)),
		PaymentMethod: stripe.String(paymentMethod), PaymentMethodTypes: []*string{stripe.String("card")},
		Metadata: metadata,
	}
	p.SetIdempotencyKey(key)
	pi, err := c.sc.V1PaymentIntents.Create(ctx, p)
	return intentOf(pi), asError(err)
}

// ConfirmIntent confirms the intent: the one request that charges the card. An
// intent succeeds at most once, whatever key confirms it.
func (c *Client) ConfirmIntent(ctx context.Context, key, intentID string) (Intent, error) {
	p := &stripe.PaymentIntentConfirmParams{}
	if c.returnURL != "" {
		p.ReturnURL = stripe.String(c.returnURL)
	}
	p.SetIdempotencyKey(key)
	pi, err := c.sc.V1PaymentIntents.Confirm(ctx, intentID, p)
	return intentOf(pi), asError(err)
}

// RetrieveIntent reads the intent by ID: strongly consistent, unlike search.
func (c *Client) RetrieveIntent(ctx context.Context, intentID string) (Intent, error) {
	pi, err := c.sc.V1PaymentIntents.Retrieve(ctx, intentID, nil)
	return intentOf(pi), asError(err)
}

// CancelIntent cancels an intent that has not succeeded (an orphan of a lost
// creation answer).
func (c *Client) CancelIntent(ctx context.Context, key, intentID string) (Intent, error) {
	p := &stripe.PaymentIntentCancelParams{CancellationReason: stripe.String("abandoned")}
	p.SetIdempotencyKey(key)
	pi, err := c.sc.V1PaymentIntents.Cancel(ctx, intentID, p)
	return intentOf(pi), asError(err)
}

// SearchIntents returns the intents whose metadata order_id is orderID, by the
// provider's search, which is eventually consistent: used to sweep orphans, never
// to decide an outcome.
func (c *Client) SearchIntents(ctx context.Context, orderID string) ([]Intent, error) {
	p := &stripe.PaymentIntentSearchParams{SearchParams: byOrder(orderID)}
	return collect(c.sc.V1PaymentIntents.Search(ctx, p), intentOf)
}

// ListIntents hands page the intents created at or after since, a page at a
// time, by the provider's list (strongly consistent, paged).
func (c *Client) ListIntents(ctx context.Context, since time.Time, page func([]Intent) error) error {
	p := &stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since.Unix()}}
	p.Limit = stripe.Int64(pageSize)
	return pages(c.sc.V1PaymentIntents.List(ctx, p), intentOf, page)
}

// RefundIntent refunds amount of the intent's charge; metadata lets a lookup tell
// this refund from anyone else's.
func (c *Client) RefundIntent(ctx context.Context, key, intentID string, amount int64, metadata map[string]string) (Refund, error) {
	return c.refund(ctx, key, &stripe.RefundCreateParams{PaymentIntent: stripe.String(intentID), Amount: stripe.Int64(amount), Metadata: metadata})
}

// refund creates the refund p asks for, with key.
func (c *Client) refund(ctx context.Context, key string, p *stripe.RefundCreateParams) (Refund, error) {
	p.SetIdempotencyKey(key)
	re, err := c.sc.V1Refunds.Create(ctx, p)
	return refundOf(re), asError(err)
}

// IntentRefunds lists the refunds of an intent, anyone's.
func (c *Client) IntentRefunds(ctx context.Context, intentID string) ([]Refund, error) {
	return c.refunds(ctx, &stripe.RefundListParams{PaymentIntent: stripe.String(intentID)})
}

// Charge charges amount (minor units) to the payment method token through the
// Charges API, as another integration of the same account may (orderflow pays
// through PaymentIntents).
func (c *Client) Charge(ctx context.Context, key string, amount int64, currency, paymentMethod, orderID string) (Charge, error) {
	p := &stripe.ChargeCreateParams{
		Amount: stripe.Int64(amount), Currency: stripe.String(strings.ToLower(currency)),
		Source:   &stripe.PaymentSourceSourceParams{Token: stripe.String(paymentMethod)},
		Metadata: map[string]string{"order_id": orderID},
	}
	p.SetIdempotencyKey(key)
	ch, err := c.sc.V1Charges.Create(ctx, p)
	return chargeOf(ch), asError(err)
}

// Refund refunds amount (minor units) of a charge (the Charges API).
func (c *Client) Refund(ctx context.Context, key, chargeID string, amount int64) (Refund, error) {
	return c.RefundCharge(ctx, key, chargeID, amount, nil)
}

// SearchCharges returns the charges whose metadata order_id is orderID, by the
// provider's eventually consistent search (the Charges API's lookup).
func (c *Client) SearchCharges(ctx context.Context, orderID string) ([]Charge, error) {
	p := &stripe.ChargeSearchParams{SearchParams: byOrder(orderID)}
	return collect(c.sc.V1Charges.Search(ctx, p), chargeOf)
}

// ListCharges hands page the charges created at or after since, a page at a
// time, by the provider's list (strongly consistent, paged), newest first.
func (c *Client) ListCharges(ctx context.Context, since time.Time, page func([]Charge) error) error {
	p := &stripe.ChargeListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since.Unix()}}
	p.Limit = stripe.Int64(pageSize)
	return pages(c.sc.V1Charges.List(ctx, p), chargeOf, page)
}

// RefundCharge refunds amount of a charge with key, marked by metadata.
func (c *Client) RefundCharge(ctx context.Context, key, chargeID string, amount int64, metadata map[string]string) (Refund, error) {
	return c.refund(ctx, key, &stripe.RefundCreateParams{Charge: stripe.String(chargeID), Amount: stripe.Int64(amount), Metadata: metadata})
}

// Dispute is a cardholder's bank contesting a charge.
type Dispute struct {
	ID     string
	Charge string
	Intent string
	Amount int64
	Status string // needs_response, under_review, won, lost...
}

// Open reports whether the dispute is not yet decided.
func (d Dispute) Open() bool {
	return d.Status != "won" && d.Status != "lost" && d.Status != "warning_closed"
}

// IntentDisputes lists the disputes of an intent's charges.
func (c *Client) IntentDisputes(ctx context.Context, intentID string) ([]Dispute, error) {
	return collect(c.sc.V1Disputes.List(ctx, &stripe.DisputeListParams{PaymentIntent: stripe.String(intentID)}), disputeOf)
}

// ListDisputes returns the disputes created at or after since (a list: strongly
// consistent, paged).
func (c *Client) ListDisputes(ctx context.Context, since time.Time) ([]Dispute, error) {
	p := &stripe.DisputeListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since.Unix()}}
	p.Limit = stripe.Int64(100)
	return collect(c.sc.V1Disputes.List(ctx, p), disputeOf)
}

// ListRefundsSince hands page the refunds created at or after since, anyone's, a
// page at a time.
func (c *Client) ListRefundsSince(ctx context.Context, since time.Time, page func([]Refund) error) error {
	p := &stripe.RefundListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since.Unix()}}
	p.Limit = stripe.Int64(pageSize)
	return pages(c.sc.V1Refunds.List(ctx, p), refundOf, page)
}

func disputeOf(d *stripe.Dispute) Dispute {
	if d == nil {
		return Dispute{}
	}
	out := Dispute{ID: d.ID, Amount: d.Amount, Status: string(d.Status)}
	if d.Charge != nil {
		out.Charge = d.Charge.ID
	}
	if d.PaymentIntent != nil {
		out.Intent = d.PaymentIntent.ID
	}
	return out
}

// ListRefunds returns the refunds of a charge.
func (c *Client) ListRefunds(ctx context.Context, chargeID string) ([]Refund, error) {
	return c.refunds(ctx, &stripe.RefundListParams{Charge: stripe.String(chargeID)})
}

func (c *Client) refunds(ctx context.Context, p *stripe.RefundListParams) ([]Refund, error) {
	return collect(c.sc.V1Refunds.List(ctx, p), refundOf)
}

// byOrder is the search for the objects whose metadata order_id is orderID (an
// order ID is derived, "ord_" and base32: nothing in it needs quoting).
func byOrder(orderID string) stripe.SearchParams {
	return stripe.SearchParams{Query: "metadata['order_id']:'" + orderID + "'"}
}

// collect reads a list or a search to its end, page by page, converting each
// object.
// pageSize is the objects per list request: the most the API gives.
const pageSize = 100

// pages hands page each page of seq's objects, converted, as the list requests
// return them: however long the list, one page is held at a time. An error of
// page stops the list and is returned.
func pages[T, U any](seq stripe.Seq2[T, error], conv func(T) U, page func([]U) error) error {
	buf := make([]U, 0, pageSize)
	for v, err := range seq {
		if err != nil {
			return asError(err)
		}
		if buf = append(buf, conv(v)); len(buf) == pageSize {
			if err := page(buf); err != nil {
				return err
			}
			buf = make([]U, 0, pageSize)
		}
	}
	if len(buf) == 0 {
		return nil
	}
	return page(buf)
}

func collect[T, U any](seq stripe.Seq2[T, error], conv func(T) U) ([]U, error) {
	var out []U
	for v, err := range seq {
		if err != nil {
			return nil, asError(err)
		}
		out = append(out, conv(v))
	}
	return out, nil
}

func intentOf(pi *stripe.PaymentIntent) Intent {
	if pi == nil {
		return Intent{}
	}
	in := Intent{ID: pi.ID, Status: string(pi.Status), Amount: pi.Amount, Received: pi.AmountReceived, Metadata: pi.Metadata}
	if pi.LatestCharge != nil {
		in.Charge = pi.LatestCharge.ID
	}
	if pi.LastPaymentError != nil {
		in.Declined = string(pi.LastPaymentError.Code)
		if pi.LastPaymentError.DeclineCode != "" {
			in.Declined = string(pi.LastPaymentError.DeclineCode)
		}
	}
	if na := pi.NextAction; na != nil && pi.Status == stripe.PaymentIntentStatusRequiresAction {
		in.NextAction = &NextAction{Type: string(na.Type), ClientSecret: pi.ClientSecret}
		if na.RedirectToURL != nil {
			in.NextAction.RedirectURL, in.NextAction.ReturnURL = na.RedirectToURL.URL, na.RedirectToURL.ReturnURL
		}
	}
	return in
}

func refundOf(re *stripe.Refund) Refund {
	if re == nil {
		return Refund{}
	}
	out := Refund{ID: re.ID, Amount: re.Amount, Status: string(re.Status), Metadata: re.Metadata,
		FailureReason: string(re.FailureReason)}
	if re.Charge != nil {
		out.Charge = re.Charge.ID
	}
	if re.PaymentIntent != nil {
		out.Intent = re.PaymentIntent.ID
	}
	return out
}

func chargeOf(ch *stripe.Charge) Charge {
	if ch == nil {
		return Charge{}
	}
	out := Charge{ID: ch.ID, Amount: ch.Amount, Currency: string(ch.Currency), Status: string(ch.Status),
		Refunded: ch.AmountRefunded, Disputed: ch.Disputed, Metadata: ch.Metadata, Created: time.Unix(ch.Created, 0)}
	if ch.PaymentIntent != nil {
		out.Intent = ch.PaymentIntent.ID
	}
	return out
}

// asError turns the library's error answers into *Error, without the request's
// objects (a payment method is no business of a log line); anything else (network,
// timeout, a body that is not Stripe's) is returned as it is.
func asError(err error) error {
	var se *stripe.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	// The provider's message quotes what it refused (a payment method, a
	// customer): scrubbed here, it reaches the order, its events and the logs clean.
	e := &Error{StatusCode: se.HTTPStatusCode, Type: string(se.Type), Code: string(se.Code), Message: redact.Secrets(se.Msg)}
	if se.LastResponse != nil {
		e.Replayed = se.LastResponse.Header.Get("Idempotent-Replayed") == "true"
	}
	if se.PaymentIntent != nil {
		in := intentOf(se.PaymentIntent)
		e.Intent = &in
	}
	return e
}
