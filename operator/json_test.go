package operator

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/quota"
)

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
