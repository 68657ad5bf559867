package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/reconcile"
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

// A dead letter's value is sealed: without the payload keys, dlq show refuses
// before it reads anything.
func TestDLQShowNeedsThePayloadKeys(t *testing.T) {
	env := map[string]string{"KAFKA_BROKERS": "127.0.0.1:1"}
	var out bytes.Buffer
	code := app(func(k string) string { return env[k] }, &out, &out).Run(context.Background(), []string{"dlq", "show", "0:0"})
	if code != 2 || !strings.Contains(out.String(), "PAYLOAD_KEYS is not set") {
		t.Fatalf("dlq show without PAYLOAD_KEYS: exit %d, want 2; output:\n%s", code, out.String())
	}
}

// objects decodes a JSON array of objects, and the sorted field names of its first.
func objects(t *testing.T, b []byte) ([]map[string]any, []string) {
	t.Helper()
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatalf("not a JSON array of objects: %v\n%s", err, b)
	}
	var names []string
	if len(rows) > 0 {
		for k := range rows[0] {
			names = append(names, k)
		}
		slices.Sort(names)
	}
	return rows, names
}

// A finding as JSON: stable snake_case names, the time in UTC.
func TestFindingsJSON(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	var out bytes.Buffer
	if err := cli.WriteJSON(&out, findingsJSON([]reconcile.Finding{{ID: 7, FoundAt: at, Kind: "refund_elsewhere", Action: "followed",
		Tenant: "acme", OrderID: "ord_1", ProviderID: "re_1", Amount: 500, Currency: "USD", Detail: "d"}})); err != nil {
		t.Fatal(err)
	}
	rows, names := objects(t, out.Bytes())
	want := []string{"ack_note", "acknowledged_at", "acknowledged_by", "action", "amount", "currency", "detail", "found_at", "id", "kind", "order_id", "provider_id", "tenant"}
	if len(rows) != 1 || !slices.Equal(names, want) {
		t.Fatalf("fields %v, want %v", names, want)
	}
	r := rows[0]
	if r["id"] != 7.0 || r["found_at"] != "2026-03-04T04:06:07Z" || r["order_id"] != "ord_1" || r["amount"] != 500.0 || r["acknowledged_at"] != nil {
		t.Fatalf("row %v", r)
	}
	out.Reset()
	if err := cli.WriteJSON(&out, findingsJSON(nil)); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Fatalf("no findings: %q %v", out.String(), err)
	}
}

// Every tenant any table names is one row, by name: keys alone, a budget alone,
// orders alone; a budget's rate and burst are null on the default.
func TestTenantRows(t *testing.T) {
	last := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	rows := tenantRows(tenantSources{
		keys:   map[string]int{"b": 2, "a": 0},
		limits: map[string]quota.Limit{"c": {Rate: 5, Burst: 10}},
		orders: map[string]orderstore.TenantOrders{"a": {Orders: 3, LastOrder: last}},
	})
	var out bytes.Buffer
	if err := cli.WriteJSON(&out, rows); err != nil {
		t.Fatal(err)
	}
	got, names := objects(t, out.Bytes())
	want := []string{"active_keys", "burst", "last_order_at", "orders", "own_budget", "rate", "tenant"}
	if len(got) != 3 || !slices.Equal(names, want) {
		t.Fatalf("%d rows of %v, want 3 of %v", len(got), names, want)
	}
	a, b, c := got[0], got[1], got[2]
	if a["tenant"] != "a" || a["orders"] != 3.0 || a["last_order_at"] != "2026-05-06T07:08:09Z" || a["active_keys"] != 0.0 || a["own_budget"] != false || a["rate"] != nil ||
		b["tenant"] != "b" || b["active_keys"] != 2.0 || b["orders"] != 0.0 || b["last_order_at"] != nil ||
		c["tenant"] != "c" || c["own_budget"] != true || c["rate"] != 5.0 || c["burst"] != 10.0 {
		t.Fatalf("rows %v", got)
	}
}

// The workflow's link escapes its ID (colons, a key's percent signs) as one path
// segment; without TEMPORAL_UI_URL there is none.
func TestWorkflowLink(t *testing.T) {
	ui := temporalUI{base: "http://ui.example:8233/", namespace: "orders"}
	got := ui.link("order:acme:http:a%2Fb c")
	if want := "http://ui.example:8233/namespaces/orders/workflows/order:acme:http:a%252Fb%20c"; got != want {
		t.Fatalf("link = %q, want %q", got, want)
	}
	if got := (temporalUI{namespace: "default"}).link("order:acme:x"); got != "" {
		t.Fatalf("link without a UI = %q", got)
	}
}

// An order as JSON: the API's fields and the operator's, lists as [] when empty,
// no provider key and no fingerprint.
func TestOrderViewJSON(t *testing.T) {
	var out bytes.Buffer
	if err := cli.WriteJSON(&out, []orderView{{Tenant: "acme", ID: "ord_1", Payments: []paymentView{{Kind: "intent"}}, Refunds: []refundView{}, Findings: findingsJSON(nil)}}); err != nil {
		t.Fatal(err)
	}
	rows, names := objects(t, out.Bytes())
	want := []string{"amount", "amount_refunded", "created_at", "currency", "customer_id", "dispute", "failure", "findings", "id", "items",
		"payment_ref", "payments", "refunds", "status", "tenant", "updated_at", "workflow_id"}
	if len(rows) != 1 || !slices.Equal(names, want) {
		t.Fatalf("fields %v, want %v", names, want)
	}
	pay := rows[0]["payments"].([]any)[0].(map[string]any)
	var payNames []string
	for k := range pay {
		payNames = append(payNames, k)
	}
	slices.Sort(payNames)
	if !slices.Equal(payNames, []string{"amount", "created_at", "currency", "kind", "provider_id", "status", "updated_at"}) {
		t.Fatalf("payment fields %v", payNames)
	}
	if r, ok := rows[0]["refunds"].([]any); !ok || len(r) != 0 {
		t.Fatalf("refunds %v, want []", rows[0]["refunds"])
	}
	if strings.Contains(out.String(), "key") || strings.Contains(out.String(), "fingerprint") {
		t.Fatalf("a key or fingerprint in %s", out.String())
	}
}
