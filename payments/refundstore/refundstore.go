// Package refundstore is the only code that reads or writes the refunds table: a
// row per refund request, written PENDING by the ingress and the workflow's first
// step, reserved, then settled SUCCEEDED or FAILED by the workflow's activities.
// The reservations of one order are weighed one at a time under LockOrder.
package refundstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/records"
)

// ErrNotFound is a refund that does not exist for the tenant asking.
var ErrNotFound = errors.New("refund not found")

// ErrBadCursor is a cursor this store did not issue.
var ErrBadCursor = records.ErrBadCursor

// Row is a refund request as the store holds it. The embedded Refund's Amount is
// what was asked (AmountRequested); Row's own Amount is what is reserved or
// refunded.
type Row struct {
	refund.Refund
	Status refund.Status
	// Amount is reserved (PENDING) or refunded (SUCCEEDED); 0 before the
	// reservation. A FAILED row keeps it for the record but holds nothing.
	Amount           int64
	AmountRequested  int64 // 0: what was left when it was reserved
	Currency         string
	Failure          string
	ProviderRefundID string
	Key              string // the provider idempotency key last sent
	Fingerprint      []byte
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Holds reports whether the row holds part of its order's charge: reserved and
// not failed.
func (r Row) Holds() bool {
	return r.Amount > 0 && (r.Status == refund.StatusPending || r.Status == refund.StatusSucceeded)
}

// DB is a pool or a transaction (database.DB).
type DB = database.DB

// Store is the refunds table.
type Store struct {
	db DB
}

// New returns the store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{db: pool} }

// On returns the store on db, a transaction whose other writes must go with the
// store's.
func On(db DB) *Store { return &Store{db: db} }

const columns = `id, tenant, workflow_id, order_id, amount_requested, COALESCE(amount, 0), COALESCE(currency, ''),
	COALESCE(reason, ''), status, COALESCE(failure, ''), COALESCE(provider_refund_id, ''), COALESCE(refund_key, ''),
	fingerprint, created_at, updated_at`

func scan(row pgx.Row) (Row, error) {
	var r Row
	err := row.Scan(&r.ID, &r.Tenant, &r.WorkflowID, &r.OrderID, &r.AmountRequested, &r.Amount, &r.Currency,
		&r.Reason, &r.Status, &r.Failure, &r.ProviderRefundID, &r.Key, &r.Fingerprint, &r.CreatedAt, &r.UpdatedAt)
	r.Refund.Amount = r.AmountRequested
	return r, err
}

// Record inserts the refund as PENDING if it is new and returns the row as it
// stands. The insert has no conflict target: id and workflow_id are unique and
// name the same refund, and an insert arbitrated on one alone fails on the other
// when it meets a concurrent insert of the same refund.
func (s *Store) Record(ctx context.Context, r refund.Refund) (Row, error) {
	row, err := scan(s.db.QueryRow(ctx, `
		INSERT INTO refunds (id, tenant, workflow_id, order_id, amount_requested, reason, status, fingerprint)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7, $8)
		ON CONFLICT DO NOTHING
		RETURNING `+columns,
		r.ID, r.Tenant, r.WorkflowID, r.OrderID, r.Amount, r.Reason, refund.StatusPending, r.Fingerprint()))
	if errors.Is(err, pgx.ErrNoRows) {
		return s.Get(ctx, r.Tenant, r.ID) // it existed: read it
	}
	if err != nil {
		return Row{}, fmt.Errorf("record refund %s: %w", r.ID, err)
	}
	return row, nil
}

// table is the refunds table as the shared reads see it.
var table = records.Table[Row]{Name: "refunds", Columns: columns, Scan: scan, NotFound: ErrNotFound}

// Get returns one of the tenant's refunds; another tenant's is ErrNotFound.
func (s *Store) Get(ctx context.Context, tenant, id string) (Row, error) {
	return table.GetBy(ctx, s.db, "id", tenant, id)
}

// GetByWorkflow returns the tenant's refund of a workflow ID.
func (s *Store) GetByWorkflow(ctx context.Context, tenant, workflowID string) (Row, error) {
	return table.GetBy(ctx, s.db, "workflow_id", tenant, workflowID)
}

// ListByOrder returns the refunds of one of the tenant's orders, newest first, and
// the cursor of the next page ("" on the last page). Pagination is keyset on
// (created_at, id): stable under concurrent inserts.
func (s *Store) ListByOrder(ctx context.Context, tenant, orderID string, limit int, cursor string) ([]Row, string, error) {
	q, args, err := records.Page(`SELECT `+columns+` FROM refunds WHERE tenant = $1 AND order_id = $2`, []any{tenant, orderID}, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	out, err := s.rows(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list refunds of %s: %w", orderID, err)
	}
	out, next := records.Cut(out, limit, func(r Row) (time.Time, string) { return r.CreatedAt, r.ID })
	return out, next, nil
}

func (s *Store) rows(ctx context.Context, q string, args ...any) ([]Row, error) {
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Row, error) { return scan(row) })
}
