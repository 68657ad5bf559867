// Package ledger is the only code that reads or writes the payments table, the
// ledger of record of every provider call: one row per idempotency key, written
// before the provider is asked and settled by its answer. A succeeded row is final.
package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Status of a payment row.
type Status string

const (
	Pending   Status = "pending"   // recorded; the provider was (perhaps) asked
	Succeeded Status = "succeeded" // final: the provider did it
	Declined  Status = "declined"  // the card's issuer said no
	Rejected  Status = "rejected"  // the provider refused the request for good
	Unknown   Status = "unknown"   // the provider replays a saved 5xx: only a lookup can tell
	Absent    Status = "absent"    // a lookup found nothing for it
)

// Kind is what a payment does.
type Kind string

const (
	Charge Kind = "charge"
	Refund Kind = "refund"
)

// Payment is one provider call of an order, keyed by its idempotency key.
type Payment struct {
	Key      string
	Kind     Kind
	OrderID  string
	Amount   int64
	Currency string
}

// Store is the payments table.
type Store struct {
	pool *pgxpool.Pool
}

// New returns the ledger on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Open records p as pending unless its key is known, and returns the key's status
// and provider ID. with, when not nil, runs in the same transaction unless the key
// already succeeded: what must hold before the provider is asked is written
// together with the row.
func (s *Store) Open(ctx context.Context, p Payment, with func(pgx.Tx) error) (Status, string, error) {
	var status Status
	var providerID string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (idempotency_key) DO NOTHING`, p.Key, p.OrderID, p.Kind, p.Amount, p.Currency, Pending); err != nil {
			return fmt.Errorf("record %s %s: %w", p.Kind, p.Key, err)
		}
		if err := tx.QueryRow(ctx, `SELECT status, COALESCE(provider_id, '') FROM payments WHERE idempotency_key = $1`, p.Key).
			Scan(&status, &providerID); err != nil {
			return fmt.Errorf("read %s %s: %w", p.Kind, p.Key, err)
		}
		if status == Succeeded || with == nil {
			return nil
		}
		return with(tx)
	})
	return status, providerID, err
}

// Settle records the provider's answer for a key. A succeeded row is final: its
// provider ID is never overwritten, and it never goes back to another status.
func (s *Store) Settle(ctx context.Context, key string, status Status, providerID string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE payments SET status = $2, provider_id = COALESCE(NULLIF($3, ''), provider_id), updated_at = now()
		WHERE idempotency_key = $1 AND status <> $4`, key, status, providerID, Succeeded)
	if err != nil {
		return fmt.Errorf("record payment %s as %s: %w", key, status, err)
	}
	return nil
}

// MarkAbsent records that a lookup found none of the order's payments of kind:
// every row still pending or unknown becomes absent.
func (s *Store) MarkAbsent(ctx context.Context, orderID string, kind Kind) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE payments SET status = $3, updated_at = now()
		WHERE order_id = $1 AND kind = $2 AND status IN ($4, $5)`, orderID, kind, Absent, Pending, Unknown)
	if err != nil {
		return fmt.Errorf("record %s of %s as absent: %w", kind, orderID, err)
	}
	return nil
}
