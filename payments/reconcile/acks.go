package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Filter narrows a list of findings; the zero value of a field does not narrow.
type Filter struct {
	Since   time.Time // found at or after
	Open    bool      // not acknowledged
	Kind    string
	OrderID string
	Limit   int // at most; required
}

const findingColumns = `id, found_at, kind, action, COALESCE(order_id, ''), COALESCE(tenant, ''), COALESCE(provider_id, ''),
	COALESCE(amount, 0), COALESCE(currency, ''), detail, acknowledged_at, COALESCE(acknowledged_by, ''), COALESCE(ack_note, '')`

// List returns the findings f selects, oldest first.
func (s *Store) List(ctx context.Context, f Filter) ([]Finding, error) {
	q := `SELECT ` + findingColumns + ` FROM reconcile_findings WHERE found_at >= $1`
	args := []any{f.Since}
	if f.Open {
		q += ` AND acknowledged_at IS NULL`
	}
	if f.Kind != "" {
		args = append(args, f.Kind)
		q += ` AND kind = $` + strconv.Itoa(len(args))
	}
	if f.OrderID != "" {
		args = append(args, f.OrderID)
		q += ` AND order_id = $` + strconv.Itoa(len(args))
	}
	args = append(args, f.Limit)
	q += ` ORDER BY found_at, id LIMIT $` + strconv.Itoa(len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read findings: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Finding, error) {
		var f Finding
		err := row.Scan(&f.ID, &f.FoundAt, &f.Kind, &f.Action, &f.OrderID, &f.Tenant, &f.ProviderID, &f.Amount, &f.Currency,
			&f.Detail, &f.AckedAt, &f.AckedBy, &f.AckNote)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("read findings: %w", err)
	}
	return found, nil
}

// Ack is what acknowledging one finding did.
type Ack struct {
	ID int64
	// Already is true when it had been acknowledged before: AckedAt and AckedBy
	// are that acknowledgement's, which stays as it was.
	Already bool
	AckedAt time.Time
	AckedBy string
}

// UnknownFindingsError names the findings asked for that do not exist; none of
// those asked for was acknowledged.
type UnknownFindingsError struct{ IDs []int64 }

func (e *UnknownFindingsError) Error() string {
	return fmt.Sprintf("no finding with ID %v; nothing was acknowledged", e.IDs)
}

// Acknowledge marks the findings ids as acknowledged by by, with note, all or
// none: an ID that names no finding is an *UnknownFindingsError and nothing is
// written. A finding acknowledged before keeps its first acknowledgement.
func (s *Store) Acknowledge(ctx context.Context, ids []int64, by, note string) ([]Ack, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	// The update runs only when every ID exists; the outer select reads the rows
	// as they were before it, so an earlier acknowledgement shows as such.
	rows, err := s.pool.Query(ctx, `
		WITH asked AS (SELECT unnest($1::bigint[]) AS id),
		complete AS (SELECT NOT EXISTS (SELECT 1 FROM asked a WHERE NOT EXISTS (SELECT 1 FROM reconcile_findings g WHERE g.id = a.id)) AS ok),
		done AS (
			UPDATE reconcile_findings f SET acknowledged_at = now(), acknowledged_by = $2, ack_note = NULLIF($3, '')
			WHERE f.id = ANY($1) AND f.acknowledged_at IS NULL AND (SELECT ok FROM complete)
			RETURNING f.id, f.acknowledged_at, f.acknowledged_by)
		SELECT a.id, g.id IS NOT NULL, done.id IS NULL AND g.id IS NOT NULL,
		       COALESCE(done.acknowledged_at, g.acknowledged_at), COALESCE(done.acknowledged_by, g.acknowledged_by, '')
		FROM asked a LEFT JOIN reconcile_findings g ON g.id = a.id LEFT JOIN done ON done.id = a.id
		ORDER BY a.id`, ids, by, note)
	if err != nil {
		return nil, fmt.Errorf("acknowledge findings: %w", err)
	}
	return collectAcks(rows)
}

// collectAcks reads Acknowledge's rows: one per ID asked for.
func collectAcks(rows pgx.Rows) ([]Ack, error) {
	var acks []Ack
	var unknown []int64
	for rows.Next() {
		var a Ack
		var exists bool
		var at *time.Time
		if err := rows.Scan(&a.ID, &exists, &a.Already, &at, &a.AckedBy); err != nil {
			rows.Close()
			return nil, fmt.Errorf("acknowledge findings: %w", err)
		}
		if !exists {
			unknown = append(unknown, a.ID)
			continue
		}
		if at != nil {
			a.AckedAt = *at
		}
		acks = append(acks, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("acknowledge findings: %w", err)
	}
	if len(unknown) > 0 {
		return nil, &UnknownFindingsError{IDs: unknown}
	}
	return acks, nil
}

// Reopening is a Store whose Record reopens an acknowledged finding that a
// later pass failed to repair: its acknowledgement is cleared and it holds the
// new failure, counted as a new finding. An acknowledgement says a person saw
// what was done then; a repair failing afterwards is news to them. The
// reconciler records through it.
type Reopening struct{ *Store }

// Record stores f as Store.Record does, except that a failure of an
// acknowledged finding reopens it (true: it is open again).
func (s Reopening) Record(ctx context.Context, f Finding) (bool, error) {
	if f.Action != ActionFailed {
		return s.Store.Record(ctx, f)
	}
	reopened, err := s.reopen(ctx, f)
	if err != nil || reopened {
		return reopened, err
	}
	return s.Store.Record(ctx, f)
}

// reopen clears the acknowledgement of f's discrepancy, if it has one, and
// stores f's failure in its row; false when no acknowledged row holds it.
func (s Reopening) reopen(ctx context.Context, f Finding) (bool, error) {
	q := `UPDATE reconcile_findings SET action = $2, amount = $3, detail = $4, found_at = now(),
		acknowledged_at = NULL, acknowledged_by = NULL, ack_note = NULL
		WHERE kind = $1 AND acknowledged_at IS NOT NULL`
	args := []any{f.Kind, f.Action, f.Amount, f.Detail}
	// = and IS NULL, not IS NOT DISTINCT FROM: the unique index answers these.
	for _, c := range []struct{ column, value string }{{"provider_id", f.ProviderID}, {"order_id", f.OrderID}} {
		if c.value == "" {
			q += ` AND ` + c.column + ` IS NULL`
			continue
		}
		args = append(args, c.value)
		q += ` AND ` + c.column + ` = $` + strconv.Itoa(len(args))
	}
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("reopen %s finding: %w", f.Kind, err)
	}
	return tag.RowsAffected() == 1, nil
}
