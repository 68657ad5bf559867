package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/orderflow/orderflow/internal/platform/cli"
)

// format is a listing's -o: a table for people, or JSON for scripts.
type format string

const (
	asTable format = "table"
	asJSON  format = "json"
)

func (f *format) String() string { return string(*f) }

func (f *format) Set(v string) error {
	switch format(v) {
	case asTable, asJSON:
		*f = format(v)
		return nil
	}
	return errors.New(`want "table" or "json"`)
}

// outputFlag declares -o on fs, table unless given.
func outputFlag(fs *flag.FlagSet, f *format) {
	*f = asTable
	fs.Var(f, "o", "output: table, or json (one array of objects)")
}

// writeJSON writes rows as one JSON array: [] for none, never null, so a script
// can always iterate it.
func writeJSON[T any](w io.Writer, rows []T) error {
	if rows == nil {
		rows = []T{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rows); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

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
