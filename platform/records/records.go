// Package records is the pattern of a kind's store, written once: a table of
// rows scoped by tenant, read by ID or by workflow ID, and listed newest first
// by keyset pages on (created_at, id), stable under concurrent inserts. A kind's
// store (orders, refunds) names its table, columns and scan; the SQL of its own
// writes stays its own.
package records

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderflow/orderflow/platform/database"
)

// ErrBadCursor is a cursor no store issued.
var ErrBadCursor = errors.New("invalid cursor")

// Table reads the rows of one tenant-scoped table as R.
type Table[R any] struct {
	// Name is the table, Columns the select list Scan reads.
	Name, Columns string
	Scan          func(pgx.Row) (R, error)
	// NotFound is the store's error for a row the tenant does not have.
	NotFound error
}

// GetBy reads the tenant's row whose column (a unique one, named by the code,
// never by a caller) is v; another tenant's row is t.NotFound.
func (t Table[R]) GetBy(ctx context.Context, db database.DB, column, tenant, v string) (R, error) {
	row, err := t.Scan(db.QueryRow(ctx, `SELECT `+t.Columns+` FROM `+t.Name+` WHERE tenant = $1 AND `+column+` = $2`, tenant, v))
	if errors.Is(err, pgx.ErrNoRows) {
		return row, t.NotFound
	}
	if err != nil {
		return row, fmt.Errorf("get %s by %s %s: %w", t.Name, column, v, err)
	}
	return row, nil
}

// And adds "AND column = value" to q, unless value is empty.
func And(q string, args []any, column, value string) (string, []any) {
	if value == "" {
		return q, args
	}
	args = append(args, value)
	return q + fmt.Sprintf(" AND %s = $%d", column, len(args)), args
}

// Page adds to q the keyset of the page after cursor (created_at, id, newest
// first) and a limit one over limit, which tells whether another page follows.
func Page(q string, args []any, cursor string, limit int) (string, []any, error) {
	if cursor != "" {
		at, id, err := DecodeCursor(cursor)
		if err != nil {
			return "", nil, err
		}
		args = append(args, at, id)
		q += fmt.Sprintf(" AND (created_at, id) < ($%d, $%d)", len(args)-1, len(args))
	}
	args = append(args, limit+1)
	q += fmt.Sprintf(" ORDER BY created_at DESC, id DESC LIMIT $%d", len(args))
	return q, args, nil
}

// Cut keeps limit of rows, read one over it by Page, and the cursor of the next
// page ("" on the last); key is a row's (created_at, id).
func Cut[T any](rows []T, limit int, key func(T) (time.Time, string)) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, EncodeCursor(key(rows[len(rows)-1]))
}

// EncodeCursor is the cursor of the page after the row (at, id).
func EncodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + ":" + id))
}

// DecodeCursor is the row a cursor continues after, or ErrBadCursor.
func DecodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", ErrBadCursor
	}
	ts, id, ok := strings.Cut(string(b), ":")
	us, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", ErrBadCursor
	}
	return time.UnixMicro(us), id, nil
}
