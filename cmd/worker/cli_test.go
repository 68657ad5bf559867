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
		out, noOut string
	}{
		{"--help", 0, "worker dlq redrive [--event-id ID]", "is required"},
		{"version", 0, "worker " + version.Release + " devel", "is required"},
		{"dlq redrive --help", 0, "--event-id", "is required"},
		{"dlq redrive extra", 2, `unexpected argument "extra"`, "is required"},
		{"dlq", 2, `unknown command "dlq"`, "is required"},
		{"migrate", 1, "DATABASE_URL is required", "PAYLOAD_KEYS"},
		{"dlq redrive", 1, "DATABASE_URL is required", "TEMPORAL"},
		{"", 1, "DATABASE_URL is required", "usage"},
	} {
		var out bytes.Buffer
		code := app(none, &out, &out).Run(context.Background(), strings.Fields(row.args))
		if code != row.code || !strings.Contains(out.String(), row.out) || strings.Contains(out.String(), row.noOut) {
			t.Errorf("worker %s: exit %d, want %d; output:\n%s", row.args, code, row.code, out.String())
		}
	}
}
