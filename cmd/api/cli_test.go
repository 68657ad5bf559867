package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/platform/version"
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
		{"keys list --help", 0, "output: table, or json", "is required"},
		{"keys list --tenant acme -o yaml", 2, `want "table" or "json"`, "is required"},
		{"limits list -o xml", 2, `want "table" or "json"`, "is required"},
		{"limits list -o json extra", 2, `unexpected argument "extra"`, "is required"},
		{"keys list --tenant acme -o json", 1, "DATABASE_URL is required", "PAYLOAD_KEYS"},
		{"limits list -o json", 1, "DATABASE_URL is required", "PAYLOAD_KEYS"},
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
