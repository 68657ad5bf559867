package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
)

// Finding is one discrepancy and what was done about it.
type Finding struct {
	ID         int64
	FoundAt    time.Time
	Kind       string
	Action     string
	OrderID    string
	Tenant     string
	ProviderID string // the charge or intent at the provider
	Amount     int64
	Currency   string
	Detail     string
	// AckedAt, AckedBy and AckNote say who acknowledged the finding, when and why;
	// AckedAt is nil while it is open.
	AckedAt *time.Time
	AckedBy string
	AckNote string
}

// Store is the reconcile_findings and reconcile_cursors tables, and what a pass
// reads of the refunds table.
type Store struct {
	pool    *pgxpool.Pool
	refunds *refundstore.Store
}

// NewStore returns the store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool, refunds: refundstore.New(pool)} }

// Rebuild writes back, in one transaction, the order and the payment that the
// workflow engine and the provider show (Known) and the table lost, and f, the
// finding that says so: true when the order's row was missing or moved and the
// finding is new (a row lost again after an earlier rebuild has its finding
// already, and counts once). An order that ended without a payment to keep has
// its row moved to how it ended. A row written back always has its finding: a
// pass that stops between them would leave a repair nobody can see (the next
// pass finds the row in place).
func (s *Store) Rebuild(ctx context.Context, k Known, f Finding) (bool, error) {
	var changed, fresh bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if !order.AfterPayment(k.Status) {
			changed, err = orderstore.New(tx).RebuildEnded(ctx, k.Order.ID, k.Status, k.IntentID)
		} else if changed, err = orderstore.New(tx).Rebuild(ctx, k.Order, k.IntentID); err == nil {
			err = ledger.On(tx).Rebuild(ctx, k.Order.ID, k.IntentID, k.ChargeID, k.Order.Amount, k.Order.Currency)
		}
		if err != nil || !changed {
			return err
		}
		fresh, err = record(ctx, tx, f)
		return err
	})
	return changed && fresh, err
}

// Known is an order as the workflow engine remembers it: the order its workflow
// was started with, and what the workflow says of its payment.
type Known struct {
	Order    order.Order
	Status   order.Status
	IntentID string
	ChargeID string
}

// RequestExplains reports whether the tenant's refund request id explains a
// refund the provider made with its ID in the metadata: the request succeeded
// with that refund, or is still on its way (its workflow settles it).
func (s *Store) RequestExplains(ctx context.Context, tenant, id, providerRefundID string) (bool, error) {
	row, err := s.refunds.Get(ctx, tenant, id)
	switch {
	case errors.Is(err, refundstore.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return row.Status == refund.StatusPending || (row.Status == refund.StatusSucceeded && row.ProviderRefundID == providerRefundID), nil
}

// Record stores f unless the same discrepancy (kind, provider object, order) is
// stored; true when it is new. A discrepancy stored as action_failed that a later
// pass repaired is stored again with what was done, and counts as new: one row per
// discrepancy, holding what was last done about it.
func (s *Store) Record(ctx context.Context, f Finding) (bool, error) {
	return record(ctx, s.pool, f)
}

// execer is a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func record(ctx context.Context, db execer, f Finding) (bool, error) {
	tag, err := db.Exec(ctx, `
		INSERT INTO reconcile_findings (kind, action, order_id, tenant, provider_id, amount, currency, detail)
		VALUES ($1, $2, NULLIF($3, ''), NULLIF($4, ''), NULLIF($5, ''), $6, NULLIF($7, ''), $8)
		ON CONFLICT (kind, provider_id, order_id) DO UPDATE
		SET action = EXCLUDED.action, amount = EXCLUDED.amount, detail = EXCLUDED.detail, found_at = now()
		WHERE reconcile_findings.action = $9 AND EXCLUDED.action <> $9`,
		f.Kind, f.Action, f.OrderID, f.Tenant, f.ProviderID, f.Amount, f.Currency, f.Detail, ActionFailed)
	if err != nil {
		return false, fmt.Errorf("record %s finding: %w", f.Kind, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Since returns the findings made at or after since, oldest first, at most limit.
func (s *Store) Since(ctx context.Context, since time.Time, limit int) ([]Finding, error) {
	return s.List(ctx, Filter{Since: since, Limit: limit})
}

// Cursor returns where the named cursor stands; false when it was never set.
func (s *Store) Cursor(ctx context.Context, name string) (time.Time, bool, error) {
	var at time.Time
	err := s.pool.QueryRow(ctx, `SELECT since FROM reconcile_cursors WHERE name = $1`, name).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return at, false, nil
	}
	if err != nil {
		return at, false, fmt.Errorf("read cursor %s: %w", name, err)
	}
	return at, true, nil
}

// SetCursor moves the named cursor to at.
func (s *Store) SetCursor(ctx context.Context, name string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO reconcile_cursors (name, since) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET since = EXCLUDED.since, updated_at = now()`, name, at)
	if err != nil {
		return fmt.Errorf("set cursor %s: %w", name, err)
	}
	return nil
}

// keyCursor names the reconcile_cursors row that holds the generation of the keys
// derived from base: when it began. Such a row lives while the object's action
// has not succeeded, a day at most (DropKeyGenerationsBefore).
func keyCursor(base string) string { return "key:" + base }

// KeyGeneration returns when the current generation of the keys derived from base
// began; zero for the first (base itself).
func (s *Store) KeyGeneration(ctx context.Context, base string) (time.Time, error) {
	at, _, err := s.Cursor(ctx, keyCursor(base))
	return at, err
}

// NewKeyGeneration begins a generation of base's keys at at: the last key's
// answer is lost for good.
func (s *Store) NewKeyGeneration(ctx context.Context, base string, at time.Time) error {
	return s.SetCursor(ctx, keyCursor(base), at)
}

// DropKeyGeneration forgets base's generation once its action succeeded.
func (s *Store) DropKeyGeneration(ctx context.Context, base string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM reconcile_cursors WHERE name = $1`, keyCursor(base)); err != nil {
		return fmt.Errorf("drop the key generation of %s: %w", base, err)
	}
	return nil
}

// DropKeyGenerationsBefore forgets the generations begun before before, whose
// objects were settled otherwise (the lost answer had done it) or left to a
// person: the table keeps a row per cursor, not per object.
func (s *Store) DropKeyGenerationsBefore(ctx context.Context, before time.Time) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM reconcile_cursors WHERE name LIKE 'key:%' AND since < $1`, before)
	if err != nil {
		return fmt.Errorf("drop key generations: %w", err)
	}
	return nil
}
