package main

import (
	"flag"
	"strings"
	"time"

	"github.com/orderflow/orderflow/platform/cli"
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
