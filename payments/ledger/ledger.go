// Package ledger is the only code that reads or writes the payments table, the
// ledger of record of every provider call: one row per idempotency key, written
// before the provider is asked and settled by its answer. A succeeded row is final.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/platform/database"
)

// Status of a payment row.
type Status string

const (
	Pending   Status = "pending"   // recorded; the provider was (perhaps) asked
	Created   Status = "created"   // an intent the provider made: its ID is recorded
	Succeeded Status = "succeeded" // final: the provider did it
	Declined  Status = "declined"  // the card's issuer said no
	Rejected  Status = "rejected"  // the provider refused the request for good
	Unknown   Status = "unknown"   // the provider replays a saved 5xx: only a lookup can tell
	Absent    Status = "absent"    // the intent, or a lookup, shows this key did nothing
	// Reversed: a refund the provider failed after it succeeded (or while it was
	// pending): no money moved in the end. Only a refund's row becomes reversed.
	Reversed Status = "reversed"
)

// Kind is what a payment does.
type Kind string

const (
	Charge Kind = "charge" // a charge, or the confirmation of the order's intent
	Refund Kind = "refund"
	Intent Kind = "intent" // the creation of the order's PaymentIntent: moves no money
)

// Payment is one provider call of an order, keyed by its idempotency key.
type Payment struct {
	Key      string
	Kind     Kind
	OrderID  string
	Amount   int64
	Currency string
	IntentID string // the PaymentIntent a confirm or refund acts on ("" for the Charges API)
}

// Entry is a key's row as the ledger holds it.
type Entry struct {
	Status     Status
	ProviderID string // the charge, refund or intent the provider made
	Amount     int64  // as first recorded: a retry sends the same request
}

// DB is a pool or a transaction (database.DB).
type DB = database.DB

// Store is the payments table.
type Store struct {
	db DB
}

// New returns the ledger on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{db: pool} }

// On returns the ledger on db, a transaction whose other statements must go with
// the ledger's (a row opened under a lock that the transaction holds).
func On(db DB) *Store { return &Store{db: db} }

// Open records p as pending unless its key is known, and returns the key's row.
// with, when not nil, runs in the same transaction unless the key already
// succeeded: what must hold before the provider is asked is written together with
// the row.
func (s *Store) Open(ctx context.Context, p Payment, with func(pgx.Tx) error) (Entry, error) {
	if with == nil {
		return open(ctx, s.db, p) // one statement: no transaction to hold
	}
	var e Entry
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		if e, err = open(ctx, tx, p); err != nil || e.Status == Succeeded {
			return err
		}
		return with(tx)
	})
	return e, err
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// open inserts p's row unless its key has one, and returns the key's row, in one
// statement. When a concurrent insert of the key commits while it waits, the
// statement's snapshot holds neither row, and a read after it finds that one.
func open(ctx context.Context, q querier, p Payment) (Entry, error) {
	var e Entry
	err := q.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status, intent_id)
			VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''))
			ON CONFLICT (idempotency_key) DO NOTHING
			RETURNING status, amount)
		SELECT status, '', amount FROM ins
		UNION ALL
		SELECT status, COALESCE(provider_id, ''), amount FROM payments
		WHERE idempotency_key = $1 AND NOT EXISTS (SELECT 1 FROM ins)`,
		p.Key, p.OrderID, p.Kind, p.Amount, p.Currency, Pending, p.IntentID).Scan(&e.Status, &e.ProviderID, &e.Amount)
	if errors.Is(err, pgx.ErrNoRows) {
		err = q.QueryRow(ctx, `SELECT status, COALESCE(provider_id, ''), amount FROM payments WHERE idempotency_key = $1`, p.Key).
			Scan(&e.Status, &e.ProviderID, &e.Amount)
	}
	if err != nil {
		return e, fmt.Errorf("record %s %s: %w", p.Kind, p.Key, err)
	}
	return e, nil
}

// RecordRefundByOthers records a refund of the order's intent that someone else
// made at the provider (under the key provider:<refund ID>), so the ledger nets
// what the provider holds. Recording it again is a no-op.
func (s *Store) RecordRefundByOthers(ctx context.Context, orderID, intentID, refundID string, amount int64, currency string) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status, provider_id, intent_id)
		VALUES ('provider:' || $3, $1, $4, $5, $6, $7, $3, $2)
		ON CONFLICT (idempotency_key) DO NOTHING`, orderID, intentID, refundID, Refund, amount, currency, Succeeded)
	if err != nil {
		return fmt.Errorf("record refund %s made elsewhere: %w", refundID, err)
	}
	return nil
}

// Settle records the provider's answer for a key. A succeeded row is final: its
// provider ID is never overwritten, and it never goes back to another status.
func (s *Store) Settle(ctx context.Context, key string, status Status, providerID string) error {
	_, err := s.db.Exec(ctx, `
		UPDATE payments SET status = $2, provider_id = COALESCE(NULLIF($3, ''), provider_id), updated_at = now()
		WHERE idempotency_key = $1 AND status <> $4`, key, status, providerID, Succeeded)
	if err != nil {
		return fmt.Errorf("record payment %s as %s: %w", key, status, err)
	}
	return nil
}

// Reverse records that the provider failed its refund providerRefundID after it
// succeeded or while it was pending: every row of that refund (a request's key,
// the order's own, others' provider:...) nets nothing from then on. True when a
// row of the order's changed.
func (s *Store) Reverse(ctx context.Context, orderID, providerRefundID string) (bool, error) {
	tag, err := s.db.Exec(ctx, `
		UPDATE payments SET status = $3, updated_at = now()
		WHERE order_id = $1 AND provider_id = $2 AND kind = $4 AND status IN ($5, $6, $7)`,
		orderID, providerRefundID, Reversed, Refund, Succeeded, Pending, Unknown)
	if err != nil {
		return false, fmt.Errorf("record refund %s as reversed: %w", providerRefundID, err)
	}
	return tag.RowsAffected() > 0, nil
}

// SettleIntentCharge records that the confirm made with key found its intent
// succeeded with chargeID. An intent charges once, so its charge is recorded on one
// row only: when another key's row already holds it, this key charged nothing.
func (s *Store) SettleIntentCharge(ctx context.Context, key, intentID, chargeID string) error {
	_, err := s.db.Exec(ctx, `
		UPDATE payments k SET provider_id = $3, updated_at = now(),
		       status = CASE WHEN EXISTS (SELECT 1 FROM payments o WHERE o.intent_id = $2 AND o.kind = $4
		                                  AND o.status = $5 AND o.idempotency_key <> $1) THEN $6 ELSE $5 END
		WHERE idempotency_key = $1 AND status <> $5`, key, intentID, chargeID, Charge, Succeeded, Absent)
	if err != nil {
		return fmt.Errorf("record the charge of intent %s under %s: %w", intentID, key, err)
	}
	return nil
}

// MarkAbsent records that a lookup found none of the order's payments of kind:
// every row still pending or unknown becomes absent.
func (s *Store) MarkAbsent(ctx context.Context, orderID string, kind Kind) error {
	_, err := s.db.Exec(ctx, `
		UPDATE payments SET status = $3, updated_at = now()
		WHERE order_id = $1 AND kind = $2 AND status IN ($4, $5)`, orderID, kind, Absent, Pending, Unknown)
	if err != nil {
		return fmt.Errorf("record %s of %s as absent: %w", kind, orderID, err)
	}
	return nil
}

// OrderOfIntent returns the order whose confirm or refund rows name the intent:
// our own record of which order an intent pays, "" when none does.
func (s *Store) OrderOfIntent(ctx context.Context, intentID string) (string, error) {
	var orderID string
	err := s.db.QueryRow(ctx, `SELECT order_id FROM payments WHERE intent_id = $1 LIMIT 1`, intentID).Scan(&orderID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find the order of intent %s: %w", intentID, err)
	}
	return orderID, nil
}

// IntentOfOrder returns the newest intent the provider created for the order, as
// recorded by its creation's row; "" when none was recorded.
func (s *Store) IntentOfOrder(ctx context.Context, orderID string) (string, error) {
	var id string
	err := s.db.QueryRow(ctx, `
		SELECT provider_id FROM payments
		WHERE order_id = $1 AND kind = $2 AND provider_id IS NOT NULL
		ORDER BY created_at DESC LIMIT 1`, orderID, Intent).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find the intent of order %s: %w", orderID, err)
	}
	return id, nil
}

// RefundKeys returns the keys of the order's refund rows that moved money or
// may yet (pending, unknown or succeeded), but for the refunds of others that
// the ledger records (provider:...): its cancel's, its failure's, and its refund
// requests'.
func (s *Store) RefundKeys(ctx context.Context, orderID string) ([]string, error) {
	rows, err := s.db.Query(ctx, `
		SELECT idempotency_key FROM payments
		WHERE order_id = $1 AND kind = $2 AND status IN ($3, $4, $5) AND idempotency_key NOT LIKE 'provider:%'`,
		orderID, Refund, Pending, Unknown, Succeeded)
	if err != nil {
		return nil, fmt.Errorf("read the refunds of order %s: %w", orderID, err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the refunds of order %s: %w", orderID, err)
	}
	return keys, nil
}

// Rebuild writes back the payment of an order whose rows were lost (a restore,
// a failover): its intent and the intent's charge, as the provider holds them.
// Their keys are the provider's IDs (rebuilt:...), never a key a run sends, so a
// run that confirms the intent again finds the charge recorded on this row and
// counts none of its own. Rebuilding again is a no-op.
func (s *Store) Rebuild(ctx context.Context, orderID, intentID, chargeID string, amount int64, currency string) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status, provider_id, intent_id)
		VALUES ('rebuilt:' || $2, $1, $4, $6, $7, $8, $2, NULL),
		       ('rebuilt:' || $3, $1, $5, $6, $7, $9, $3, $2)
		ON CONFLICT (idempotency_key) DO NOTHING`,
		orderID, intentID, chargeID, Intent, Charge, amount, currency, Created, Succeeded)
	if err != nil {
		return fmt.Errorf("rebuild the payment of order %s: %w", orderID, err)
	}
	return nil
}

// Line is one provider call of an order as an operator sees it: never its key.
type Line struct {
	Kind       Kind
	Status     Status
	Amount     int64
	Currency   string
	ProviderID string // the intent, charge or refund the provider made; "" before
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// OfOrder returns the order's provider calls, oldest first.
func (s *Store) OfOrder(ctx context.Context, orderID string) ([]Line, error) {
	rows, err := s.db.Query(ctx, `
		SELECT kind, status, amount, currency, COALESCE(provider_id, ''), created_at, updated_at
		FROM payments WHERE order_id = $1 ORDER BY created_at, idempotency_key`, orderID)
	if err != nil {
		return nil, fmt.Errorf("read the payments of %s: %w", orderID, err)
	}
	lines, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Line, error) {
		var l Line
		err := row.Scan(&l.Kind, &l.Status, &l.Amount, &l.Currency, &l.ProviderID, &l.CreatedAt, &l.UpdatedAt)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the payments of %s: %w", orderID, err)
	}
	return lines, nil
}
