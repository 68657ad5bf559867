package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
)

// Format is a listing's -o: a table for people, or JSON for scripts.
type Format string

// The formats -o takes.
const (
	Table Format = "table"
	JSON  Format = "json"
)

func (f *Format) String() string { return string(*f) }

// Set takes table or json.
func (f *Format) Set(v string) error {
	switch Format(v) {
	case Table, JSON:
		*f = Format(v)
		return nil
	}
	return errors.New(`want "table" or "json"`)
}

// OutputFlag declares -o on fs, table unless given.
func OutputFlag(fs *flag.FlagSet, f *Format) {
	*f = Table
	fs.Var(f, "o", "output: table, or json (one array of objects)")
}

// WriteJSON writes rows as one JSON array: [] for none, never null, so a script
// can always iterate it.
func WriteJSON[T any](w io.Writer, rows []T) error {
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
