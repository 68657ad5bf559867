// Package orderstore is the only code that reads or writes the orders table, the
// read model shared by the workflow's activities (which write it) and the ingresses
// (which insert and read it). Every status change goes through Move, which enforces
// the order domain's state machine. The one query of orders that other stores'
// statements embed, FingerprintOf (through the order kind, ingress.Ledgered), is
// written here too.
package orderstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/records"
)

// ErrNotFound is an order that does not exist for the tenant asking.
var ErrNotFound = errors.New("order not found")

// Row is an order as the store holds it.
type Row struct {
	ID         string
	Status     order.Status
	CustomerID string
	Currency   string
	Amount     int64
	Items      []order.Item
	PaymentRef string
	Failure    string
	// AmountRefunded is what was refunded at the provider by others and by refund
	// requests (PARTIALLY_REFUNDED, REFUNDED).
	AmountRefunded int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
	WorkflowID     string
	// Fingerprint is the request's (order.Fingerprint); nil for orders recorded
	// before fingerprints.
	Fingerprint []byte
	// CustomerHash is the customer's keyed hash; nil for orders recorded before
	// personal values were sealed (their CustomerID is plain).
	CustomerHash []byte
	// Dispute is the status of the latest dispute of an order that had ended when
	// its payment was disputed; "" for none.
	Dispute string
}

// DB is what the store runs statements on: a pool, or a transaction that must
// include the store's write (database.DB).
type DB = database.DB

// Store is the orders table.
type Store struct {
	db DB
}

// New returns the store on db.
func New(db DB) *Store { return &Store{db: db} }

// FingerprintOf is the SQL query of the fingerprint of the order a workflow made
// (NULL for orders from before fingerprints), for another store to ask in the
// same statement as its own read or write; tenant and workflowID are SQL
// expressions of that statement (placeholders or columns).
func FingerprintOf(tenant, workflowID string) string {
	return `SELECT o.fingerprint FROM orders o WHERE o.tenant = ` + tenant + ` AND o.workflow_id = ` + workflowID
}

// CountByStatus counts the tenant's orders in a status.
func (s *Store) CountByStatus(ctx context.Context, tenant string, status order.Status) (int, error) {
	var n int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM orders WHERE tenant = $1 AND status = $2`, tenant, status).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s orders: %w", status, err)
	}
	return n, nil
}

// ErrInvalidTransition is a status change the order's current status forbids (or an
// order that does not exist); retrying cannot fix it.
var ErrInvalidTransition = errors.New("invalid status transition")

// Move sets the order's status to to if the state machine allows it from the current
// status; paymentRef and failure are kept when empty. Moving to the status the order
// already has is a no-op, so a retried move is safe.
func (s *Store) Move(ctx context.Context, id string, to order.Status, paymentRef, failure string) error {
	return s.move(ctx, id, to, paymentRef, failure, order.Sources(to))
}

// MarkPaid moves the order to PAID from a status before its payment only: a
// dispute won moves a DISPUTED order back to PAID (Follow), never a run that
// pays again an order others have moved since.
func (s *Store) MarkPaid(ctx context.Context, id, paymentRef string) error {
	return s.move(ctx, id, order.StatusPaid, paymentRef, "", order.BeforePayment())
}

func (s *Store) move(ctx context.Context, id string, to order.Status, paymentRef, failure string, from []order.Status) error {
	tag, err := s.db.Exec(ctx, `
		UPDATE orders
		SET status = $2,
		    payment_ref = COALESCE(NULLIF($3, ''), payment_ref),
		    failure = COALESCE(NULLIF($4, ''), failure),
		    paid_at = CASE WHEN $2 = 'PAID' THEN COALESCE(paid_at, now()) ELSE paid_at END,
		    updated_at = now()
		WHERE id = $1 AND status = ANY($5)`,
		id, to, paymentRef, failure, from)
	if err != nil {
		return fmt.Errorf("move order %s to %s: %w", id, to, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var current order.Status
	err = s.db.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1`, id).Scan(&current)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("order %s does not exist: %w", id, ErrInvalidTransition)
	case err != nil:
		return fmt.Errorf("read order %s: %w", id, err)
	case current == to:
		return nil
	}
	return fmt.Errorf("order %s: cannot go from %s to %s: %w", id, current, to, ErrInvalidTransition)
}

// PaidAt returns when the order was first recorded PAID; nil if it never was.
// Orders paid before the time was recorded have their last change instead, which
// for a PAID order is that move.
func (s *Store) PaidAt(ctx context.Context, id string) (*time.Time, error) {
	var at *time.Time
	err := s.db.QueryRow(ctx, `
		SELECT COALESCE(paid_at, CASE WHEN status = 'PAID' THEN updated_at END) FROM orders WHERE id = $1`, id).Scan(&at)
	if err != nil {
		return nil, fmt.Errorf("read when order %s was paid: %w", id, err)
	}
	return at, nil
}

// insertSQL has no conflict target: the order has two unique keys (id and
// workflow_id, the same order either way), and an insert arbitrated on one alone
// fails on the other when it meets a concurrent insert of the same order.
const insertSQL = `
	INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status, fingerprint, customer_hash)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT DO NOTHING`

func insertArgs(o order.Order) ([]any, error) {
	items, err := json.Marshal(o.Items)
	if err != nil {
		return nil, fmt.Errorf("encode items: %w", err)
	}
	return []any{o.ID, o.Tenant, o.WorkflowID, o.CustomerID, items, o.Amount, o.Currency, order.StatusPending, o.Fingerprint(), o.CustomerHash}, nil
}

// Insert records the order as PENDING; inserting it again is a no-op.
func (s *Store) Insert(ctx context.Context, o order.Order) error {
	args, err := insertArgs(o)
	if err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, insertSQL, args...); err != nil {
		return fmt.Errorf("insert order %s: %w", o.ID, err)
	}
	return nil
}

// Record inserts the order as PENDING if it is new and returns the order as it
// stands: one round trip for a new order, two for a known one.
func (s *Store) Record(ctx context.Context, o order.Order) (Row, error) {
	args, err := insertArgs(o)
	if err != nil {
		return Row{}, err
	}
	v, err := scan(s.db.QueryRow(ctx, insertSQL+` RETURNING `+columns, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return s.Get(ctx, o.Tenant, o.ID) // it existed: read it
	}
	if err != nil {
		return Row{}, fmt.Errorf("insert order %s: %w", o.ID, err)
	}
	return v, nil
}

const columns = `id, status, customer_id, currency, amount, items, COALESCE(payment_ref, ''), COALESCE(failure, ''), COALESCE(amount_refunded, 0), created_at, updated_at, workflow_id, fingerprint, COALESCE(dispute, ''), customer_hash`

func scan(row pgx.Row) (Row, error) {
	var v Row
	var items []byte
	err := row.Scan(&v.ID, &v.Status, &v.CustomerID, &v.Currency, &v.Amount, &items, &v.PaymentRef, &v.Failure, &v.AmountRefunded,
		&v.CreatedAt, &v.UpdatedAt, &v.WorkflowID, &v.Fingerprint, &v.Dispute, &v.CustomerHash)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(items, &v.Items); err != nil {
		return v, fmt.Errorf("decode items of %s: %w", v.ID, err)
	}
	return v, nil
}

// table is the orders table as the shared reads see it.
var table = records.Table[Row]{Name: "orders", Columns: columns, Scan: scan, NotFound: ErrNotFound}

// Get returns one of the tenant's orders; another tenant's order is ErrNotFound.
func (s *Store) Get(ctx context.Context, tenant, id string) (Row, error) {
	return table.GetBy(ctx, s.db, "id", tenant, id)
}

// GetByWorkflow returns the tenant's order of a workflow ID.
func (s *Store) GetByWorkflow(ctx context.Context, tenant, workflowID string) (Row, error) {
	return table.GetBy(ctx, s.db, "workflow_id", tenant, workflowID)
}

// Filter narrows a list; Cursor continues a previous page.
type Filter struct {
	WorkflowID string
	// CustomerHash finds a customer's orders; CustomerID, the plain ID, finds
	// those recorded before personal values were sealed.
	CustomerHash []byte
	CustomerID   string
	Status       order.Status
	Limit        int
	Cursor       string
}

// ErrBadCursor is a cursor this store did not issue.
var ErrBadCursor = records.ErrBadCursor

// List returns the tenant's orders, newest first, and the cursor of the next page
// ("" on the last page). Pagination is keyset on (created_at, id): stable under
// concurrent inserts.
func (s *Store) List(ctx context.Context, tenant string, f Filter) ([]Row, string, error) {
	q := `SELECT ` + columns + ` FROM orders WHERE tenant = $1`
	args := []any{tenant}
	q, args = records.And(q, args, "workflow_id", f.WorkflowID)
	if f.CustomerID != "" {
		args = append(args, f.CustomerHash, f.CustomerID)
		q += fmt.Sprintf(" AND (customer_hash = $%d OR customer_hash IS NULL AND customer_id = $%d)", len(args)-1, len(args))
	}
	q, args = records.And(q, args, "status", string(f.Status))
	q, args, err := records.Page(q, args, f.Cursor, f.Limit)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list orders: %w", err)
	}
	defer rows.Close()
	out := []Row{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list orders: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list orders: %w", err)
	}
	out, next := records.Cut(out, f.Limit, func(r Row) (time.Time, string) { return r.CreatedAt, r.ID })
	return out, next, nil
}

// Unsettled is an order whose payment has not settled, with its tenant.
type Unsettled struct {
	Row
	Tenant string
}

// Order is the order as its workflow is started with.
func (u Unsettled) Order() order.Order {
	return order.Order{ID: u.ID, Tenant: u.Tenant, WorkflowID: u.WorkflowID, CustomerID: u.CustomerID,
		Items: u.Items, Amount: u.Amount, Currency: u.Currency, CustomerHash: u.CustomerHash, Print: u.Fingerprint}
}

// Unsettled returns up to limit orders not yet settled (PENDING or waiting on
// their payment) whose last change is older than before, oldest first.
func (s *Store) Unsettled(ctx context.Context, before time.Time, limit int) ([]Unsettled, error) {
	rows, err := s.db.Query(ctx, `
		SELECT `+columns+`, tenant FROM orders
		WHERE status IN ('PENDING', 'PAYMENT_PENDING', 'PAYMENT_UNKNOWN', 'PAYMENT_ACTION_REQUIRED') AND updated_at < $1
		ORDER BY updated_at LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("read unsettled orders: %w", err)
	}
	defer rows.Close()
	var out []Unsettled
	for rows.Next() {
		var u Unsettled
		var items []byte
		if err := rows.Scan(&u.ID, &u.Status, &u.CustomerID, &u.Currency, &u.Amount, &items, &u.PaymentRef, &u.Failure,
			&u.AmountRefunded, &u.CreatedAt, &u.UpdatedAt, &u.WorkflowID, &u.Fingerprint, &u.Dispute, &u.CustomerHash, &u.Tenant); err != nil {
			return nil, fmt.Errorf("read unsettled orders: %w", err)
		}
		if err := json.Unmarshal(items, &u.Items); err != nil {
			return nil, fmt.Errorf("decode items of %s: %w", u.ID, err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// Standing is an order's status and tenant, for a check that needs no more.
type Standing struct {
	Tenant     string
	WorkflowID string
	Status     order.Status
	PaymentRef string
	Amount     int64
	Currency   string
}

// Standings returns the standing of each of ids that exists, in one statement.
func (s *Store) Standings(ctx context.Context, ids []string) (map[string]Standing, error) {
	rows, err := s.db.Query(ctx, `SELECT id, tenant, workflow_id, status, COALESCE(payment_ref, ''), amount, currency FROM orders WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	defer rows.Close()
	out := make(map[string]Standing, len(ids))
	for rows.Next() {
		var id string
		var st Standing
		if err := rows.Scan(&id, &st.Tenant, &st.WorkflowID, &st.Status, &st.PaymentRef, &st.Amount, &st.Currency); err != nil {
			return nil, fmt.Errorf("read orders: %w", err)
		}
		out[id] = st
	}
	return out, rows.Err()
}

// Follow moves a paid order to what the provider shows of its payment (to, with
// refunded refunded by others), if it is still in a status that follows the
// provider and the state machine allows it; true when the order changed.
func (s *Store) Follow(ctx context.Context, id string, to order.Status, refunded int64) (bool, error) {
	var after []order.Status
	for _, st := range order.Statuses {
		if order.AfterPayment(st) && (st == to || order.CanMove(st, to)) {
			after = append(after, st)
		}
	}
	tag, err := s.db.Exec(ctx, `
		UPDATE orders SET status = $2, amount_refunded = NULLIF($3, 0), updated_at = now()
		WHERE id = $1 AND status = ANY($4) AND (status <> $2 OR COALESCE(amount_refunded, 0) <> $3)`,
		id, to, refunded, after)
	if err != nil {
		return false, fmt.Errorf("move order %s to %s: %w", id, to, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Rebuild writes back an order that its workflow shows paid by paymentRef but
// the table does not: lost to a restore or a failover, or recorded again before
// its payment by a request retried after the loss. True when the row was
// missing or moved; an order others moved on since its payment is left as it is.
func (s *Store) Rebuild(ctx context.Context, o order.Order, paymentRef string) (bool, error) {
	items, err := json.Marshal(o.Items)
	if err != nil {
		return false, fmt.Errorf("encode items: %w", err)
	}
	tag, err := s.db.Exec(ctx, `
		INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status, fingerprint, payment_ref, paid_at, customer_hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now(), $11)
		ON CONFLICT DO NOTHING`,
		o.ID, o.Tenant, o.WorkflowID, o.CustomerID, items, o.Amount, o.Currency, order.StatusPaid, o.Fingerprint(), paymentRef, o.CustomerHash)
	if err != nil {
		return false, fmt.Errorf("rebuild order %s: %w", o.ID, err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	tag, err = s.db.Exec(ctx, `
		UPDATE orders SET status = $2, payment_ref = $3, paid_at = COALESCE(paid_at, now()), updated_at = now()
		WHERE id = $1 AND status = ANY($4)`, o.ID, order.StatusPaid, paymentRef, order.BeforePayment())
	if err != nil {
		return false, fmt.Errorf("rebuild order %s: %w", o.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// NoteDispute records the status of a dispute of an order that had ended
// (CANCELLED, FAILED, REFUNDED) when its payment was disputed: such an order
// keeps its status and shows the dispute. True when the order changed.
func (s *Store) NoteDispute(ctx context.Context, id, status string) (bool, error) {
	tag, err := s.db.Exec(ctx, `
		UPDATE orders SET dispute = $2, updated_at = now()
		WHERE id = $1 AND status = ANY($3) AND dispute IS DISTINCT FROM $2`,
		id, status, []order.Status{order.StatusCancelled, order.StatusFailed, order.StatusRefunded})
	if err != nil {
		return false, fmt.Errorf("note dispute of order %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// RebuildEnded moves an order recorded again before its payment, whose workflow
// ended it (declined; cancelled or failed, refunded if it charged), to that
// status: true when it moved.
func (s *Store) RebuildEnded(ctx context.Context, id string, to order.Status, paymentRef string) (bool, error) {
	tag, err := s.db.Exec(ctx, `
		UPDATE orders SET status = $2, payment_ref = COALESCE(NULLIF($3, ''), payment_ref), updated_at = now()
		WHERE id = $1 AND status = ANY($4)`, id, to, paymentRef, order.BeforePayment())
	if err != nil {
		return false, fmt.Errorf("rebuild order %s as %s: %w", id, to, err)
	}
	return tag.RowsAffected() == 1, nil
}

// TenantOrders is what the orders table holds of one tenant.
type TenantOrders struct {
	Orders    int
	LastOrder time.Time // when its newest order was created
}

// Tenants returns, for every tenant with an order, how many it has and when the
// newest was created: one pass over orders_tenant_created.
func (s *Store) Tenants(ctx context.Context) (map[string]TenantOrders, error) {
	rows, err := s.db.Query(ctx, `SELECT tenant, count(*), max(created_at) FROM orders GROUP BY tenant`)
	if err != nil {
		return nil, fmt.Errorf("count orders by tenant: %w", err)
	}
	defer rows.Close()
	out := map[string]TenantOrders{}
	for rows.Next() {
		var tenant string
		var t TenantOrders
		if err := rows.Scan(&tenant, &t.Orders, &t.LastOrder); err != nil {
			return nil, fmt.Errorf("count orders by tenant: %w", err)
		}
		out[tenant] = t
	}
	return out, rows.Err()
}

// Located is an order found across tenants: its tenant, and its row.
type Located struct {
	Tenant string
	Row
}

// tenantFirst scans a row whose first column is the tenant, then the columns.
type tenantFirst struct {
	pgx.Row
	tenant *string
}

func (r tenantFirst) Scan(dest ...any) error { return r.Row.Scan(append([]any{r.tenant}, dest...)...) }

// Locate returns the orders, of any tenant, whose ID is id or whose workflow ID is
// one of workflowIDs, oldest first: an operator's lookup, not a tenant's.
func (s *Store) Locate(ctx context.Context, id string, workflowIDs []string) ([]Located, error) {
	rows, err := s.db.Query(ctx, `SELECT tenant, `+columns+` FROM orders WHERE id = $1 OR workflow_id = ANY($2)
		ORDER BY created_at, id`, id, workflowIDs)
	if err != nil {
		return nil, fmt.Errorf("locate order %s: %w", id, err)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Located, error) {
		var l Located
		var err error
		l.Row, err = scan(tenantFirst{Row: row, tenant: &l.Tenant})
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("locate order %s: %w", id, err)
	}
	return found, nil
}

// TenantNames returns the tenants with an order, by name: a skip through
// orders_tenant_created, one probe per tenant rather than a scan of every order.
func (s *Store) TenantNames(ctx context.Context) ([]string, error) {
	rows, err := s.db.Query(ctx, `
		WITH RECURSIVE t (tenant) AS (
			SELECT min(tenant) FROM orders
			UNION ALL
			SELECT (SELECT min(o.tenant) FROM orders o WHERE o.tenant > t.tenant) FROM t WHERE t.tenant IS NOT NULL)
		SELECT tenant FROM t WHERE tenant IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("list tenants with orders: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list tenants with orders: %w", err)
	}
	return names, nil
}

// Page is an operator's page of orders: of one tenant or every tenant, in one
// status or any; Cursor continues a previous page.
type Page struct {
	Tenant string
	Status order.Status
	Limit  int
	Cursor string
}

// Browse returns the orders p selects, of any tenant, newest first, and the
// cursor of the next page ("" on the last): an operator's listing, not a
// tenant's. With a tenant it walks orders_tenant_created; without one it sorts
// what the status selects, cheap for the unsettled statuses (orders_payment_open).
func (s *Store) Browse(ctx context.Context, p Page) ([]Located, string, error) {
	q := `SELECT tenant, ` + columns + ` FROM orders WHERE true`
	q, args := records.And(q, nil, "tenant", p.Tenant)
	q, args = records.And(q, args, "status", string(p.Status))
	q, args, err := records.Page(q, args, p.Cursor, p.Limit)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("browse orders: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Located, error) {
		var l Located
		var err error
		l.Row, err = scan(tenantFirst{Row: row, tenant: &l.Tenant})
		return l, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("browse orders: %w", err)
	}
	found, next := records.Cut(found, p.Limit, func(l Located) (time.Time, string) { return l.CreatedAt, l.ID })
	return found, next, nil
}
