package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/quota"

	"github.com/orderflow/orderflow/platform/cli"
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

// fields decodes a JSON array of objects into the sorted field names of each.
func fields(t *testing.T, b []byte) ([][]string, []map[string]any) {
	t.Helper()
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatalf("not a JSON array of objects: %v\n%s", err, b)
	}
	var names [][]string
	for _, r := range rows {
		var n []string
		for k := range r {
			n = append(n, k)
		}
		slices.Sort(n)
		names = append(names, n)
	}
	return names, rows
}

// A key listed as JSON has its prefix and dates under stable names, never its hash;
// no keys is [], not null.
func TestKeysListJSON(t *testing.T) {
	revoked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var out bytes.Buffer
	err := printKeys(&out, []apikeys.Info{
		{Prefix: "of_aaaaaaaaaaaa", Tenant: "acme", CreatedAt: revoked.Add(-time.Hour)},
		{Prefix: "of_bbbbbbbbbbbb", Tenant: "acme", CreatedAt: revoked.Add(-2 * time.Hour), RevokedAt: &revoked},
	}, cli.JSON)
	if err != nil {
		t.Fatal(err)
	}
	names, rows := fields(t, out.Bytes())
	want := []string{"active", "created_at", "prefix", "revoked_at", "tenant"}
	if len(rows) != 2 || !slices.Equal(names[0], want) || !slices.Equal(names[1], want) {
		t.Fatalf("fields %v, want two rows of %v", names, want)
	}
	if rows[0]["prefix"] != "of_aaaaaaaaaaaa" || rows[0]["active"] != true || rows[0]["revoked_at"] != nil ||
		rows[1]["active"] != false || rows[1]["revoked_at"] != "2026-01-02T03:04:05Z" {
		t.Fatalf("rows %v", rows)
	}
	out.Reset()
	if err := printKeys(&out, nil, cli.JSON); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Fatalf("no keys: %q %v", out.String(), err)
	}
}

// Budgets listed as JSON: one object per tenant, sorted, with its rate and burst.
func TestLimitsListJSON(t *testing.T) {
	var out bytes.Buffer
	if err := printLimits(&out, map[string]quota.Limit{"b": {Rate: 2.5, Burst: 5}, "a": {Rate: 10, Burst: 20}}, cli.JSON); err != nil {
		t.Fatal(err)
	}
	names, rows := fields(t, out.Bytes())
	if len(rows) != 2 || !slices.Equal(names[0], []string{"burst", "rate", "tenant"}) ||
		rows[0]["tenant"] != "a" || rows[1]["tenant"] != "b" || rows[1]["rate"] != 2.5 || rows[1]["burst"] != 5.0 {
		t.Fatalf("rows %v", rows)
	}
	out.Reset()
	if err := printLimits(&out, map[string]quota.Limit{"a": {Rate: 10, Burst: 20}}, cli.Table); err != nil || out.String() != "a\t10/s\tburst 20\n" {
		t.Fatalf("table %q %v", out.String(), err)
	}
}
