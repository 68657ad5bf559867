package records

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A cursor names the last row of a page; anything else is refused.
func TestCursorsRoundTripAndForeignOnesAreRefused(t *testing.T) {
	at := time.UnixMicro(1_765_000_000_123_456)
	gotAt, gotID, err := DecodeCursor(EncodeCursor(at, "ord_1:x"))
	if err != nil || !gotAt.Equal(at) || gotID != "ord_1:x" {
		t.Fatalf("round trip: %v %q %v", gotAt, gotID, err)
	}
	for _, c := range []string{"%%%", EncodeCursor(at, "")[:4], "MTIz", "eDpvcmQ"} {
		if _, _, err := DecodeCursor(c); !errors.Is(err, ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
		}
	}
}

// A page reads one row over its limit; Cut keeps the limit and names the last.
func TestPageReadsOneOverAndCutNamesTheLast(t *testing.T) {
	q, args, err := Page("SELECT id FROM t WHERE tenant = $1", []any{"acme"}, EncodeCursor(time.UnixMicro(5), "b"), 2)
	if err != nil || !strings.Contains(q, "(created_at, id) < ($2, $3)") || !strings.HasSuffix(q, "LIMIT $4") || args[3] != 3 {
		t.Fatalf("page: %s %v %v", q, args, err)
	}
	type row struct {
		at time.Time
		id string
	}
	rows := []row{{time.UnixMicro(3), "c"}, {time.UnixMicro(2), "d"}, {time.UnixMicro(1), "e"}}
	key := func(r row) (time.Time, string) { return r.at, r.id }
	kept, next := Cut(rows, 2, key)
	if at, id, _ := DecodeCursor(next); len(kept) != 2 || id != "d" || !at.Equal(time.UnixMicro(2)) {
		t.Fatalf("cut: %d rows, next names %q", len(kept), id)
	}
	if _, next := Cut(rows, 3, key); next != "" {
		t.Fatalf("last page has a next cursor %q", next)
	}
}
