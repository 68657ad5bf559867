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
		out, noOut string
	}{
		{"--help", 0, "worker dlq redrive [--id ID... | --tenant T --kind K --event-id ID...", "is required"},
		{"version", 0, "worker " + version.Release + " devel", "is required"},
		{"dlq redrive --help", 0, "--event-id", "is required"},
		{"dlq redrive extra", 2, `unexpected argument "extra"`, "is required"},
		{"dlq", 2, `unknown command "dlq"`, "is required"},
		{"dlq redrive --help", 0, "--dry-run", "is required"},
		{"dlq list --help", 0, "DLQ_TOPIC", "is required"},
		{"dlq list extra", 2, `unexpected argument "extra"`, "is required"},
		{"dlq list -o xml", 2, `want "table" or "json"`, "is required"},
		{"dlq show --help", 0, "PAYLOAD_KEYS", "is required"},
		{"dlq purge --help", 0, "--dry-run", "is required"},
		{"dlq purge --by ana", 2, "want --id ID..., --tenant T --kind K --event-id ID..., or --all", "is required"},
		{"dlq purge --all --tenant acme --kind order --event-id e1 --by ana", 2, "or --all: one of them", "is required"},
		{"dlq purge --event-id e1 --by ana", 2, "an eventId alone names no letter", "is required"},
		{"dlq purge --tenant acme --event-id e1 --by ana", 2, "an eventId alone names no letter", "is required"},
		{"dlq purge --tenant acme --kind parcel --event-id e1 --by ana", 2, `--kind "parcel" is not a kind: want order or refund`, "is required"},
		{"dlq purge --id abc --tenant acme --kind order --event-id e1 --by ana", 2, "not both", "is required"},
		{"dlq purge --tenant acme --kind refund --event-id e1 --by ana", 1, "DATABASE_URL is required", "TEMPORAL"},
		{"dlq redrive --event-id e1", 2, "an eventId alone names no letter", "is required"},
		{"dlq show 0:1 --id abc", 2, "want one PARTITION:OFFSET", "is required"},
		{"dlq list --kind order", 2, "an eventId alone names no letter", "is required"},
		{"dlq purge --all", 2, "want --by NAME", "is required"},
		{"dlq purge --all --by ana extra", 2, `unexpected argument "extra"`, "is required"},
		{"dlq purge --all --by ana", 1, "DATABASE_URL is required", "TEMPORAL"},
		{"dlq show", 2, "want one PARTITION:OFFSET", "is required"},
		{"dlq show 1", 2, `"1" is not PARTITION:OFFSET`, "is required"},
		{"dlq show 0:-1", 2, `"0:-1" is not PARTITION:OFFSET`, "is required"},
		{"reconcile report --help", 0, "output: table, or json", "is required"},
		{"reconcile report -o yaml", 2, `want "table" or "json"`, "is required"},
		{"reconcile report -o json", 1, "DATABASE_URL is required", "PAYLOAD_KEYS"},
		{"findings list --help", 0, "--open", "is required"},
		{"findings list --since -1h", 2, "want a positive --since", "is required"},
		{"findings list extra", 2, "want a positive --since and no argument", "is required"},
		{"findings list --open -o json", 1, "DATABASE_URL is required", "PAYLOAD_KEYS"},
		{"findings ack --help", 0, "--by", "is required"},
		{"findings ack --by ana", 2, "want at least one finding ID", "is required"},
		{"findings ack 12", 2, "want --by NAME", "is required"},
		{"findings ack 12 x --by ana", 2, `"x" is not a finding ID`, "is required"},
		{"findings ack 12 --by", 2, "flag needs an argument", "is required"},
		{"findings ack 12 --by ana --note done", 1, "DATABASE_URL is required", "PAYLOAD_KEYS"},
		{"tenants list --help", 0, "DATABASE_URL", "is required"},
		{"tenants list -o csv", 2, `want "table" or "json"`, "is required"},
		{"tenants list acme", 2, `unexpected argument "acme"`, "is required"},
		{"tenants list -o json", 1, "DATABASE_URL is required", "PAYLOAD_KEYS"},
		{"orders show --help", 0, "TEMPORAL_UI_URL", "is required"},
		{"orders show", 2, "want one order ID or key", "is required"},
		{"orders show a b", 2, "want one order ID or key", "is required"},
		{"orders show k --tenant Bad:Name", 2, `--tenant "Bad:Name" is not a tenant name`, "is required"},
		{"orders show k -o json --tenant acme", 1, "DATABASE_URL is required", "PAYLOAD_KEYS"},
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
