package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/provider"
)

// Temporal error types of payment outcomes that a retry cannot change.
const (
	ErrCardDeclined    = "CardDeclined"
	ErrPaymentRejected = "PaymentRejected"
)

// Provider is the payment provider as the activities see it.
type Provider interface {
	Charge(ctx context.Context, key string, amount int64, currency, paymentMethod, orderID string) (provider.Charge, error)
	Refund(ctx context.Context, key, chargeID string, amount int64) (provider.Refund, error)
}

var _ Provider = (*provider.Client)(nil)

// Payments charges and refunds orders, recording each call in the payments table.
type Payments struct {
	pool     *pgxpool.Pool
	provider Provider
}

// NewPayments returns the payment activities.
func NewPayments(pool *pgxpool.Pool, provider Provider) *Payments {
	return &Payments{pool: pool, provider: provider}
}

// ChargeInput asks for one order's charge.
type ChargeInput struct {
	WorkflowID    string
	OrderID       string
	Amount        int64
	Currency      string
	PaymentMethod string
}

// ChargeResult is a successful charge.
type ChargeResult struct {
	Key      string
	ChargeID string
}

// Charge charges the order with the key {workflowID}/charge on every attempt, so the
// provider charges at most once whatever happens to this process or its answers.
// Before the call the order shows PAYMENT_PENDING: until an attempt gets an answer,
// nobody knows whether the card was charged.
func (a *Payments) Charge(ctx context.Context, in ChargeInput) (ChargeResult, error) {
	key := order.PaymentKey(in.WorkflowID, "charge")
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

// RefundInput asks for the refund of one order's charge.
type RefundInput struct {
	WorkflowID string
	OrderID    string
	ChargeID   string
	Amount     int64
	Currency   string
}

// RefundResult is a successful refund.
type RefundResult struct {
	Key      string
	RefundID string
}

// Refund refunds the order's charge in full, with the key {workflowID}/refund.
func (a *Payments) Refund(ctx context.Context, in RefundInput) (RefundResult, error) {
	key := order.PaymentKey(in.WorkflowID, "refund")
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

// payment is one row of the payments table.
type payment struct {
	key, kind, orderID string
	amount             int64
	currency           string
}

// call records the payment as pending (together with what also must hold before the
// provider is asked, in one transaction), calls the provider with heartbeats, and
// records the answer.
func (a *Payments) call(ctx context.Context, p payment, also func(pgx.Tx) error, do func(context.Context) (string, error)) (string, error) {
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status)
			VALUES ($1, $2, $3, $4, $5, 'pending')
			ON CONFLICT (idempotency_key) DO NOTHING`, p.key, p.orderID, p.kind, p.amount, p.currency); err != nil {
			return fmt.Errorf("record %s %s: %w", p.kind, p.key, err)
		}
		if also == nil {
			return nil
		}
		return also(tx)
	})
	if err != nil {
		return "", err
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

// failed records a final provider answer and turns it into a non-retryable error;
// anything else (5xx, timeouts, network) is returned for Temporal to retry.
func (a *Payments) failed(ctx context.Context, key string, err error) error {
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Retryable() {
		return fmt.Errorf("payment %s: %w", key, err)
	}
	status, typ := "rejected", ErrPaymentRejected
	if perr.Declined() {
		status, typ = "declined", ErrCardDeclined
	}
	if serr := a.settle(ctx, key, status, ""); serr != nil {
		return serr
	}
	return temporal.NewNonRetryableApplicationError(perr.Error(), typ, nil)
}

func (a *Payments) settle(ctx context.Context, key, status, providerID string) error {
	_, err := a.pool.Exec(ctx, `
		UPDATE payments SET status = $2, provider_id = COALESCE(NULLIF($3, ''), provider_id), updated_at = now()
		WHERE idempotency_key = $1`, key, status, providerID)
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
