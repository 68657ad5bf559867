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
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status)
			VALUES ($1, $2, 'charge', $3, $4, 'pending')
			ON CONFLICT (idempotency_key) DO NOTHING`, key, in.OrderID, in.Amount, in.Currency); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE orders SET status = $2, updated_at = now() WHERE id = $1 AND status = $3`,
			in.OrderID, order.StatusPaymentPending, order.StatusPending)
		return err
	})
	if err != nil {
		return ChargeResult{}, fmt.Errorf("record charge %s: %w", key, err)
	}

	stop := heartbeat(ctx)
	ch, err := a.provider.Charge(ctx, key, in.Amount, in.Currency, in.PaymentMethod, in.OrderID)
	stop()
	if err != nil {
		return ChargeResult{}, a.failed(ctx, key, err)
	}
	if err := a.settle(ctx, key, "succeeded", ch.ID); err != nil {
		return ChargeResult{}, err
	}
	return ChargeResult{Key: key, ChargeID: ch.ID}, nil
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
	if _, err := a.pool.Exec(ctx, `
		INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status)
		VALUES ($1, $2, 'refund', $3, $4, 'pending')
		ON CONFLICT (idempotency_key) DO NOTHING`, key, in.OrderID, in.Amount, in.Currency); err != nil {
		return RefundResult{}, fmt.Errorf("record refund %s: %w", key, err)
	}
	stop := heartbeat(ctx)
	re, err := a.provider.Refund(ctx, key, in.ChargeID, in.Amount)
	stop()
	if err != nil {
		return RefundResult{}, a.failed(ctx, key, err)
	}
	if err := a.settle(ctx, key, "succeeded", re.ID); err != nil {
		return RefundResult{}, err
	}
	return RefundResult{Key: key, RefundID: re.ID}, nil
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
