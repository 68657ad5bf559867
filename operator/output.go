package operator

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/database"
)

// stamp is a time as the tables print it.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// utc is a time as JSON carries it: UTC, nil for none.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// positional returns a command's arguments with the flags among them parsed:
// Go's flag package stops at the first argument, but an operator writes
// `findings ack 12 --by ana` as readily as `findings ack --by ana 12`.
func positional(fs *flag.FlagSet) ([]string, error) {
	var pos []string
	args := fs.Args()
	for len(args) > 0 {
		if !strings.HasPrefix(args[0], "-") || args[0] == "-" {
			pos, args = append(pos, args[0]), args[1:]
			continue
		}
		if err := fs.Parse(args); err != nil {
			return nil, cli.Usagef("%v", err)
		}
		args = fs.Args()
	}
	return pos, nil
}

// dash is s, or "-" for nothing, in a table.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// openDatabase opens a small pool on DATABASE_URL, the only setting the
// database's commands read.
func openDatabase(ctx context.Context, getenv func(string) string) (*pgxpool.Pool, error) {
	e := config.New(getenv)
	url := e.Required("DATABASE_URL")
	if err := e.Err(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return database.Open(ctx, url, 2, nil)
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
