package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform/personal"
)

// Temporal error types of payment outcomes. The final ones (declined, rejected,
// unknown) are non-retryable: a retry of the same activity cannot change them.
// Refused credentials and a key in use are retryable: the same key is safe to send
// again, so the workflow's retry policy waits them out (attempts add nothing to
// its history), or lists them as non-retryable to act on them itself.
const (
	// ErrCardDeclined: a definite no from the card's issuer.
	ErrCardDeclined = "CardDeclined"
	// ErrPaymentRejected: the provider refused the request for good (invalid).
	ErrPaymentRejected = "PaymentRejected"
	// ErrPaymentUnknown: the provider replays a saved 5xx for the key; what it did
	// can only be found by reading the intent (on the Charges path, a lookup).
	ErrPaymentUnknown = "PaymentUnknown"
	// ErrProviderUnauthorized: the provider refused our credentials; nothing ran,
	// and the same key is safe to send again once they are fixed.
	ErrProviderUnauthorized = "ProviderUnauthorized"
	// ErrPaymentInFlight: the provider is still running the first request with the
	// key (409); its answer is not known yet, never unknown: wait, then send the
	// same key again (or read the intent).
	ErrPaymentInFlight = "PaymentInFlight"
)

// Provider is the payment provider as the activities see it: PaymentIntents.
type Provider interface {
	CreateIntent(ctx context.Context, key string, amount int64, currency, paymentMethod string, metadata map[string]string) (provider.Intent, error)
	ConfirmIntent(ctx context.Context, key, intentID string) (provider.Intent, error)
	RetrieveIntent(ctx context.Context, intentID string) (provider.Intent, error)
	CancelIntent(ctx context.Context, key, intentID string) (provider.Intent, error)
	SearchIntents(ctx context.Context, orderID string) ([]provider.Intent, error)
	RefundIntent(ctx context.Context, key, intentID string, amount int64, metadata map[string]string) (provider.Refund, error)
	IntentRefunds(ctx context.Context, intentID string) ([]provider.Refund, error)
	IntentDisputes(ctx context.Context, intentID string) ([]provider.Dispute, error)
}

var _ Provider = (*provider.Client)(nil)

// PaymentMetrics count what an operator must see.
type PaymentMetrics struct {
	// Unknown counts provider answers that left an outcome unknown.
	Unknown prometheus.Counter
	// Unauthorized counts requests the provider refused for credentials: alert on it.
	Unauthorized prometheus.Counter
	// Refunds counts refund requests as they end, by outcome.
	Refunds *prometheus.CounterVec
}

// The outcomes of orderflow_refunds_total.
const (
	outcomeSucceeded = "succeeded"
	outcomeFailed    = "failed"
)

// NewPaymentMetrics registers the payment metrics.
func NewPaymentMetrics(reg prometheus.Registerer) PaymentMetrics {
	m := PaymentMetrics{
		Unknown: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_payment_outcomes_unknown_total",
			Help: "Provider calls whose outcome was left unknown (saved 5xx, timeout, lost answer); each is reconciled by lookup.",
		}),
		Unauthorized: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderflow_payment_provider_unauthorized_total",
			Help: "Provider requests refused for credentials (401/403); retried, never final. Alert when it grows.",
		}),
		Refunds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderflow_refunds_total",
			Help: "Refund requests ended: succeeded at the provider, or failed (refused, or nothing left to refund).",
		}, []string{"outcome"}),
	}
	// Both outcomes at zero: a rate of failures is there before the first one.
	m.Refunds.WithLabelValues(outcomeSucceeded)
	m.Refunds.WithLabelValues(outcomeFailed)
	reg.MustRegister(m.Unknown, m.Unauthorized, m.Refunds)
	return m
}

// Payments pays and refunds orders through PaymentIntents, recording each call in
// the ledger of record before the provider is asked; refund requests too.
type Payments struct {
	ledger   *ledger.Store
	orders   *orderstore.Store
	refunds  *refundstore.Store
	provider Provider
	m        PaymentMetrics
	personal Revealer // nil: payment methods are plain
}

// Revealer opens a personal value sealed under its customer's key
// (*custkeys.Store); a plain value (an order placed before sealing) comes back
// as it is.
type Revealer interface {
	Reveal(ctx context.Context, tenant, value string) (string, error)
}

// OpenPaymentMethods makes p open sealed payment methods with r before they
// reach the provider. (A function, not a method: every exported method of
// Payments is an activity.)
func OpenPaymentMethods(p *Payments, r Revealer) {
	p.personal = r
}

// paymentMethod is in's payment method as the provider takes it. An erased
// customer's is gone: the charge fails for good, never sent.
func (a *Payments) paymentMethod(ctx context.Context, in IntentInput) (string, error) {
	if a.personal == nil {
		return in.PaymentMethod, nil
	}
	pm, err := a.personal.Reveal(ctx, in.Tenant, in.PaymentMethod)
	if errors.Is(err, personal.ErrErased) {
		return "", temporal.NewNonRetryableApplicationError("the customer was erased: no payment method", "CustomerErased", err)
	}
	return pm, err
}

// NewPayments returns the payment activities.
func NewPayments(pool *pgxpool.Pool, provider Provider, m PaymentMetrics) *Payments {
	return &Payments{ledger: ledger.New(pool), orders: orderstore.New(pool), refunds: refundstore.New(pool), provider: provider, m: m}
}

// Step is one payment of an order, in the input of every payment activity. Key is
// the provider key the workflow derived (order.PaymentKey).
type Step struct {
	WorkflowID string
	OrderID    string
	Amount     int64
	Currency   string
	Key        string
}

// RefundResult is a successful refund.
type RefundResult struct {
	Key      string
	RefundID string
}

func (a *Payments) lookupFailed(err error) error {
	if classify(err).errType == ErrProviderUnauthorized {
		a.m.Unauthorized.Inc()
	}
	return fmt.Errorf("look up at the provider: %w", err) // retried until it answers
}

// pending moves the order to PAYMENT_PENDING in the ledger's transaction, as a
// charge is recorded: until an answer comes, nobody knows whether the card was
// charged.
func (a *Payments) pending(ctx context.Context, orderID string) func(pgx.Tx) error {
	return func(tx pgx.Tx) error {
		return asActivityError(orderstore.New(tx).Move(ctx, orderID, order.StatusPaymentPending, "", ""))
	}
}

// verdict is what a provider error means for the ledger and the workflow.
type verdict struct {
	status  ledger.Status // what the ledger records; "" for nothing
	errType string        // the error's type; "" for an untyped error Temporal retries
}

// classify reads a provider error: final answers and saved 5xx are non-retryable
// (typed) and recorded; refused credentials and a key still in use (409: the first
// request runs on) are typed, recorded nowhere, and sent again with the same key
// once the workflow's policy allows; anything else (a fresh 5xx, 429, timeouts,
// network) is left for Temporal to retry.
func classify(err error) verdict {
	var perr *provider.Error
	switch {
	case errors.As(err, &perr) && perr.InUse():
		return verdict{errType: ErrPaymentInFlight}
	case !errors.As(err, &perr) || perr.Retryable():
		return verdict{}
	case perr.Unauthorized():
		return verdict{errType: ErrProviderUnauthorized}
	case perr.Unknown():
		return verdict{ledger.Unknown, ErrPaymentUnknown}
	case perr.Declined():
		return verdict{ledger.Declined, ErrCardDeclined}
	}
	return verdict{ledger.Rejected, ErrPaymentRejected}
}

// failed records a provider answer and turns it into the error the workflow acts on.
func (a *Payments) failed(ctx context.Context, key string, err error) error {
	v := classify(err)
	switch v.errType {
	case "":
		return fmt.Errorf("payment %s: %w", key, err)
	case ErrProviderUnauthorized:
		a.m.Unauthorized.Inc()
	case ErrPaymentUnknown:
		a.m.Unknown.Inc()
	}
	if v.status != "" {
		if serr := a.ledger.Settle(ctx, key, v.status, ""); serr != nil {
			return serr
		}
	}
	if v.errType == ErrProviderUnauthorized || v.errType == ErrPaymentInFlight {
		return temporal.NewApplicationError(err.Error(), v.errType)
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), v.errType, nil)
}

// Heartbeat reports liveness every second until stop is called, while a provider
// call (or a reconcile pass) is in flight, so a worker that dies mid-call is
// noticed within the heartbeat timeout instead of the full start-to-close
// timeout. Outside an activity it does nothing.
func Heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
