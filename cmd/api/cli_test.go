package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/internal/platform/version"
)

// The command line is read before any configuration: help and version need no
// environment, usage errors exit 2, and each command asks only for what it uses.
func TestCommandLine(t *testing.T) {
	none := func(string) string { return "" }
	for _, row := range []struct {
		args       string
		code       int
		out, noOut string // in stdout+stderr; must not appear
	}{
		{"--help", 0, "keys create --tenant NAME", "is required"},
		{"-h", 0, "api migrate", "is required"},
		{"help", 0, "api version", "is required"},
		{"version", 0, "api " + version.Release + " devel", "is required"},
		{"keys create --help", 0, "--tenant", "is required"},
		{"migrate -h", 0, "DATABASE_URL", "is required"},
		{"keys create", 2, "want --tenant NAME", "is required"},
		{"keys revoke", 2, "want one KEY_PREFIX", "is required"},
		{"keys create --tenant", 2, "flag needs an argument", "is required"},
		{"bogus", 2, `unknown command "bogus"`, "is required"},
		{"--bogus", 2, "flag provided but not defined", "is required"},
		{"keys create --tenant acme", 1, "DATABASE_URL is required", "PAYLOAD_KEYS"},
		{"migrate", 1, "DATABASE_URL is required", "PAYLOAD_KEYS"},
		{"", 1, "DATABASE_URL is required", "usage"},
	} {
		var out bytes.Buffer
		code := app(none, &out, &out).Run(context.Background(), strings.Fields(row.args))
		if code != row.code || !strings.Contains(out.String(), row.out) || strings.Contains(out.String(), row.noOut) {
			t.Errorf("api %s: exit %d, want %d; output:\n%s", row.args, code, row.code, out.String())
		}
	}
}
