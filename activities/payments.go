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

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/provider"
)

// Temporal error types of payment outcomes, all non-retryable: a retry of the same
// activity cannot change them.
const (
	// ErrCardDeclined: a definite no from the card's issuer.
	ErrCardDeclined = "CardDeclined"
	// ErrPaymentRejected: the provider refused the request for good (invalid).
	ErrPaymentRejected = "PaymentRejected"
	// ErrPaymentUnknown: the provider replays a saved 5xx for the key; whether it
	// charged can only be found by looking the charge up.
	ErrPaymentUnknown = "PaymentUnknown"
	// ErrProviderUnauthorized: the provider refused our credentials; nothing ran,
	// and the same key is safe to send again once they are fixed.
	ErrProviderUnauthorized = "ProviderUnauthorized"
)

// Provider is the payment provider as the activities see it.
type Provider interface {
	Charge(ctx context.Context, key string, amount int64, currency, paymentMethod, orderID string) (provider.Charge, error)
	Refund(ctx context.Context, key, chargeID string, amount int64) (provider.Refund, error)
	SearchCharges(ctx context.Context, orderID string) ([]provider.Charge, error)
	ListRefunds(ctx context.Context, chargeID string) ([]provider.Refund, error)
}

var _ Provider = (*provider.Client)(nil)

// PaymentMetrics count what an operator must see.
type PaymentMetrics struct {
	// Unknown counts provider answers that left an outcome unknown.
	Unknown prometheus.Counter
	// Unauthorized counts requests the provider refused for credentials: alert on it.
	Unauthorized prometheus.Counter
}

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
	}
	reg.MustRegister(m.Unknown, m.Unauthorized)
	return m
}

// Payments charges and refunds orders, recording each call in the payments table,
// the ledger of record.
type Payments struct {
	pool     *pgxpool.Pool
	provider Provider
	m        PaymentMetrics
}

// NewPayments returns the payment activities.
func NewPayments(pool *pgxpool.Pool, provider Provider, m PaymentMetrics) *Payments {
	return &Payments{pool: pool, provider: provider, m: m}
}

// ChargeInput asks for one order's charge. Key is the provider key the workflow
// derived (order.PaymentKey); empty in workflows started before it, which use the
// legacy key.
type ChargeInput struct {
	WorkflowID    string
	OrderID       string
	Amount        int64
	Currency      string
	PaymentMethod string
	Key           string
}

// ChargeResult is a successful charge.
type ChargeResult struct {
	Key      string
	ChargeID string
}

// Charge charges the order with in.Key on every attempt, so the provider charges at
// most once for it whatever happens to this process or its answers. If the ledger
// already holds a success for the key (a run started again after Temporal's
// retention), that charge is returned and the provider is not called. Before the
// call the order shows PAYMENT_PENDING: until an answer comes, nobody knows whether
// the card was charged.
func (a *Payments) Charge(ctx context.Context, in ChargeInput) (ChargeResult, error) {
	key := in.Key
	if key == "" {
		key = order.LegacyPaymentKey(in.WorkflowID, "charge")
	}
	pending := func(tx pgx.Tx) error {
		return asActivityError(orderstore.New(tx).Move(ctx, in.OrderID, order.StatusPaymentPending, "", ""))
	}
	id, err := a.call(ctx, payment{key: key, kind: "charge", orderID: in.OrderID, amount: in.Amount, currency: in.Currency}, pending,
		func(ctx context.Context) (string, error) {
			ch, err := a.provider.Charge(ctx, key, in.Amount, in.Currency, in.PaymentMethod, in.OrderID)
			return ch.ID, err
		})
	if err != nil {
		return ChargeResult{}, err
	}
	return ChargeResult{Key: key, ChargeID: id}, nil
}

// RefundInput asks for the refund of one order's charge; Key as in ChargeInput.
type RefundInput struct {
	WorkflowID string
	OrderID    string
	ChargeID   string
	Amount     int64
	Currency   string
	Key        string
}

// RefundResult is a successful refund.
type RefundResult struct {
	Key      string
	RefundID string
}

// Refund refunds the order's charge in full with in.Key.
func (a *Payments) Refund(ctx context.Context, in RefundInput) (RefundResult, error) {
	key := in.Key
	if key == "" {
		key = order.LegacyPaymentKey(in.WorkflowID, "refund")
	}
	id, err := a.call(ctx, payment{key: key, kind: "refund", orderID: in.OrderID, amount: in.Amount, currency: in.Currency}, nil,
		func(ctx context.Context) (string, error) {
			re, err := a.provider.Refund(ctx, key, in.ChargeID, in.Amount)
			return re.ID, err
		})
	if err != nil {
		return RefundResult{}, err
	}
	return RefundResult{Key: key, RefundID: id}, nil
}

// LookupInput asks whether an order was charged (ChargeID empty) or its charge
// refunded; Key is the key whose outcome is unknown.
type LookupInput struct {
	OrderID  string
	ChargeID string
	Key      string
}

// LookupResult is what the provider holds: the succeeded charge (or refund), if any.
type LookupResult struct {
	Found bool
	ID    string
}

// Lookup resolves an unknown outcome by asking the provider what exists, never by
// guessing. Found: the ledger row of Key records it. Not found: every unsettled row
// of the order of that kind is marked absent (the caller has waited the provider's
// consistency window before asking).
func (a *Payments) Lookup(ctx context.Context, in LookupInput) (LookupResult, error) {
	kind, res := "charge", LookupResult{}
	if in.ChargeID == "" {
		charges, err := a.provider.SearchCharges(ctx, in.OrderID)
		if err != nil {
			return res, a.lookupFailed(err)
		}
		for _, c := range charges {
			if c.Status == "succeeded" {
				res = LookupResult{Found: true, ID: c.ID}
				break
			}
		}
	} else {
		kind = "refund"
		refunds, err := a.provider.ListRefunds(ctx, in.ChargeID)
		if err != nil {
			return res, a.lookupFailed(err)
		}
		for _, r := range refunds {
			if r.Status == "succeeded" || r.Status == "pending" {
				res = LookupResult{Found: true, ID: r.ID}
				break
			}
		}
	}
	if res.Found {
		return res, a.settle(ctx, in.Key, "succeeded", res.ID)
	}
	_, err := a.pool.Exec(ctx, `
		UPDATE payments SET status = 'absent', updated_at = now()
		WHERE order_id = $1 AND kind = $2 AND status IN ('pending', 'unknown')`, in.OrderID, kind)
	if err != nil {
		return res, fmt.Errorf("record %s of %s as absent: %w", kind, in.OrderID, err)
	}
	return res, nil
}

func (a *Payments) lookupFailed(err error) error {
	var perr *provider.Error
	if errors.As(err, &perr) && perr.Unauthorized() {
		a.m.Unauthorized.Inc()
	}
	return fmt.Errorf("look up at the provider: %w", err) // retried until it answers
}

// payment is one row of the payments table.
type payment struct {
	key, kind, orderID string
	amount             int64
	currency           string
}

// call records the payment as pending (together with what also must hold before the
// provider is asked, in one transaction), calls the provider with heartbeats, and
// records the answer. A key the ledger already holds as succeeded is not sent again.
func (a *Payments) call(ctx context.Context, p payment, also func(pgx.Tx) error, do func(context.Context) (string, error)) (string, error) {
	var status, providerID string
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status)
			VALUES ($1, $2, $3, $4, $5, 'pending')
			ON CONFLICT (idempotency_key) DO NOTHING`, p.key, p.orderID, p.kind, p.amount, p.currency); err != nil {
			return fmt.Errorf("record %s %s: %w", p.kind, p.key, err)
		}
		if err := tx.QueryRow(ctx, `SELECT status, COALESCE(provider_id, '') FROM payments WHERE idempotency_key = $1`, p.key).
			Scan(&status, &providerID); err != nil {
			return fmt.Errorf("read %s %s: %w", p.kind, p.key, err)
		}
		if status == "succeeded" || also == nil {
			return nil
		}
		return also(tx)
	})
	if err != nil {
		return "", err
	}
	if status == "succeeded" && providerID != "" {
		return providerID, nil // the ledger of record already has it
	}
	stop := heartbeat(ctx)
	id, err := do(ctx)
	stop()
	if err != nil {
		return "", a.failed(ctx, p.key, err)
	}
	if err := a.settle(ctx, p.key, "succeeded", id); err != nil {
		return "", err
	}
	return id, nil
}

// failed records a provider answer and turns it into the error the workflow acts
// on: final answers and saved 5xx are non-retryable (typed); credentials are
// non-retryable here and retried by the workflow with the same key; anything else
// (a fresh 5xx, 409, 429, timeouts, network) is returned for Temporal to retry.
func (a *Payments) failed(ctx context.Context, key string, err error) error {
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Retryable() {
		return fmt.Errorf("payment %s: %w", key, err)
	}
	var status, typ string
	switch {
	case perr.Unauthorized():
		a.m.Unauthorized.Inc()
		return temporal.NewNonRetryableApplicationError(perr.Error(), ErrProviderUnauthorized, nil)
	case perr.Unknown():
		a.m.Unknown.Inc()
		status, typ = "unknown", ErrPaymentUnknown
	case perr.Declined():
		status, typ = "declined", ErrCardDeclined
	default:
		status, typ = "rejected", ErrPaymentRejected
	}
	if serr := a.settle(ctx, key, status, ""); serr != nil {
		return serr
	}
	return temporal.NewNonRetryableApplicationError(perr.Error(), typ, nil)
}

// settle records an answer for a key. A succeeded row is final: its provider_id is
// never overwritten, and it never goes back to another status.
func (a *Payments) settle(ctx context.Context, key, status, providerID string) error {
	_, err := a.pool.Exec(ctx, `
		UPDATE payments SET status = $2, provider_id = COALESCE(NULLIF($3, ''), provider_id), updated_at = now()
		WHERE idempotency_key = $1 AND status <> 'succeeded'`, key, status, providerID)
	if err != nil {
		return fmt.Errorf("record payment %s as %s: %w", key, status, err)
	}
	return nil
}

// heartbeat reports liveness while a provider call is in flight, so a worker that
// dies mid-call is noticed within the heartbeat timeout instead of the full
// start-to-close timeout. Outside an activity it does nothing.
func heartbeat(ctx context.Context) (stop func()) {
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
