package refundstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderflow/orderflow/payments/refund"
)

// LockOrder runs fn in one transaction that holds the order's refund lock, a
// transaction-scoped advisory lock on its ID: every worker process weighs the
// order's refunds (its refund requests' reservations, its cancel's refund) one at
// a time, while the orders row itself stays free for the order's own steps. The
// lock goes with the transaction, however it ends.
func (s *Store) LockOrder(ctx context.Context, orderID string, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "orderflow:refunds:"+orderID); err != nil {
			return fmt.Errorf("lock the refunds of %s: %w", orderID, err)
		}
		return fn(tx)
	})
	if err != nil {
		return fmt.Errorf("refunds of order %s: %w", orderID, err)
	}
	return nil
}

// Reserved returns the refunds of the tenant's order that were ever reserved
// (amount set), whatever their status: those that hold part of the charge (Row.Holds)
// and the keys they were sent with.
func (s *Store) Reserved(ctx context.Context, tenant, orderID string) ([]Row, error) {
	out, err := s.rows(ctx, `SELECT `+columns+` FROM refunds WHERE tenant = $1 AND order_id = $2 AND amount IS NOT NULL`, tenant, orderID)
	if err != nil {
		return nil, fmt.Errorf("read the reservations of %s: %w", orderID, err)
	}
	return out, nil
}

// Reserve sets the refund's reservation, once: a PENDING refund with none takes
// amount (in currency); any other is left as it is.
func (s *Store) Reserve(ctx context.Context, id string, amount int64, currency string) error {
	_, err := s.db.Exec(ctx, `
		UPDATE refunds SET amount = $2, currency = $3, updated_at = now()
		WHERE id = $1 AND status = $4 AND amount IS NULL`, id, amount, currency, refund.StatusPending)
	if err != nil {
		return fmt.Errorf("reserve %d for refund %s: %w", amount, id, err)
	}
	return nil
}

// SetKey records the provider idempotency key the refund is sent with, before it
// is sent.
func (s *Store) SetKey(ctx context.Context, id, key string) error {
	if _, err := s.db.Exec(ctx, `UPDATE refunds SET refund_key = $2, updated_at = now() WHERE id = $1`, id, key); err != nil {
		return fmt.Errorf("record the key of refund %s: %w", id, err)
	}
	return nil
}

// Settle records that the provider refunded amount with providerRefundID. The
// provider's word is final: a succeeded row is never changed again, and a FAILED
// one that the provider shows refunded becomes SUCCEEDED.
func (s *Store) Settle(ctx context.Context, id, providerRefundID string, amount int64) (bool, error) {
	tag, err := s.db.Exec(ctx, `
		UPDATE refunds SET status = $2, provider_refund_id = $3, amount = $4, failure = NULL, updated_at = now()
		WHERE id = $1 AND status <> $2`, id, refund.StatusSucceeded, providerRefundID, amount)
	if err != nil {
		return false, fmt.Errorf("record refund %s as succeeded: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Fail ends a PENDING refund FAILED with failure: its reservation, if any, is
// released (the amount stays for the record).
func (s *Store) Fail(ctx context.Context, id, failure string) (bool, error) {
	tag, err := s.db.Exec(ctx, `
		UPDATE refunds SET status = $2, failure = $3, updated_at = now()
		WHERE id = $1 AND status = $4`, id, refund.StatusFailed, failure, refund.StatusPending)
	if err != nil {
		return false, fmt.Errorf("record refund %s as failed: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Reverse ends the tenant's refund FAILED with failure when the provider failed
// its refund after it succeeded (or while it was pending): its reservation is
// released. It returns the row as it was before, and true when it changed.
func (s *Store) Reverse(ctx context.Context, tenant, id, failure string) (Row, bool, error) {
	row, err := s.Get(ctx, tenant, id)
	if err != nil {
		return row, false, err
	}
	tag, err := s.db.Exec(ctx, `
		UPDATE refunds SET status = $3, failure = $4, updated_at = now()
		WHERE tenant = $1 AND id = $2 AND status IN ($5, $6)`,
		tenant, id, refund.StatusFailed, failure, refund.StatusSucceeded, refund.StatusPending)
	if err != nil {
		return row, false, fmt.Errorf("record refund %s as failed by the provider: %w", id, err)
	}
	return row, tag.RowsAffected() == 1, nil
}

// Stale returns up to limit PENDING refunds last changed before before, oldest
// first (the partial index refunds_pending).
func (s *Store) Stale(ctx context.Context, before time.Time, limit int) ([]Row, error) {
	out, err := s.rows(ctx, `SELECT `+columns+` FROM refunds WHERE status = $1 AND updated_at < $2 ORDER BY updated_at LIMIT $3`,
		refund.StatusPending, before, limit)
	if err != nil {
		return nil, fmt.Errorf("read pending refunds: %w", err)
	}
	return out, nil
}

// Rebuild writes back a refund the table lost (a restore, a failover) as the
// provider holds it: SUCCEEDED with the provider's refund and amount. A row in
// place is left as it is; true when it wrote.
func (s *Store) Rebuild(ctx context.Context, r refund.Refund, providerRefundID string, amount int64, currency string) (bool, error) {
	tag, err := s.db.Exec(ctx, `
		INSERT INTO refunds (id, tenant, workflow_id, order_id, amount_requested, amount, currency, status, provider_refund_id)
		VALUES ($1, $2, $3, $4, $5, $5, $6, $7, $8)
		ON CONFLICT DO NOTHING`,
		r.ID, r.Tenant, r.WorkflowID, r.OrderID, amount, currency, refund.StatusSucceeded, providerRefundID)
	if err != nil {
		return false, fmt.Errorf("rebuild refund %s: %w", r.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}
