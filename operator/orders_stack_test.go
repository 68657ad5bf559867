//go:build stack

package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// shown runs orders show with DATABASE_URL and a Temporal UI; its exit status, and
// the orders it printed as JSON.
func shown(t *testing.T, args ...string) (int, []orderView, string) {
	t.Helper()
	env := stacktest.Env(t)
	vars := map[string]string{"DATABASE_URL": env["DATABASE_URL"], "TEMPORAL_UI_URL": "http://ui.test:8233", "TEMPORAL_NAMESPACE": "ns"}
	var out, errs bytes.Buffer
	code := workerApp(func(k string) string { return vars[k] }, &out, &errs).Run(context.Background(),
		append([]string{"orders", "show", "-o", "json"}, args...))
	var views []orderView
	if code == 0 {
		if err := json.Unmarshal(out.Bytes(), &views); err != nil {
			t.Fatalf("orders show %v: %v\n%s", args, err, out.String())
		}
	}
	return code, views, errs.String()
}

// placed records an order of tenant as a POST with the Idempotency-Key key makes
// it, with its intent in the ledger.
func placed(t *testing.T, tenant, key string) string {
	t.Helper()
	ctx := context.Background()
	pool := stacktest.Pool(t)
	wf := order.WorkflowID(tenant, order.FromHTTP, key)
	id := order.IDFor(wf)
	if _, err := pool.Exec(ctx, `
		INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status, payment_ref, paid_at)
		VALUES ($1, $2, $3, 'cus_7', '[{"sku":"s","quantity":1,"unit_amount":1000}]', 1000, 'USD', 'PAID', 'pi_' || $1, now())`,
		id, tenant, wf); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status, provider_id, intent_id)
		VALUES ('secret-key-' || $1, $1, 'intent', 1000, 'USD', 'succeeded', 'pi_' || $1, 'pi_' || $1)`, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// An order is found by ID across tenants, or by key in every tenant that used
// it (or the one --tenant names), with its payments, refunds, findings and a
// link to its workflow; what names nothing is exit 1.
func TestOrdersShowAcrossTenants(t *testing.T) {
	ctx := context.Background()
	pool := stacktest.Pool(t)
	a, b := stacktest.Name("showa"), stacktest.Name("showb")
	key := "cart/" + stacktest.Name("k")
	idA, idB := placed(t, a, key), placed(t, b, key)
	rwf := refund.WorkflowID(a, identity.FromHTTP, "r1")
	if _, err := refundstore.New(pool).Record(ctx, refund.Refund{ID: refund.IDFor(rwf), Tenant: a, WorkflowID: rwf, OrderID: idA, Amount: 300}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO reconcile_findings (kind, action, order_id, tenant, provider_id, amount, currency)
		VALUES ('refund_elsewhere', 'followed', $1, $2, 're_x', 200, 'USD')`, idA, a); err != nil {
		t.Fatal(err)
	}

	code, views, errs := shown(t, idA)
	if code != 0 || len(views) != 1 {
		t.Fatalf("by ID: exit %d, %d orders\n%s", code, len(views), errs)
	}
	v := views[0]
	wantURL := "http://ui.test:8233/namespaces/ns/workflows/order:" + a + ":http:cart%2F" + strings.TrimPrefix(key, "cart/")
	if v.Tenant != a || v.ID != idA || v.Status != "PAID" || v.Amount != 1000 || v.CustomerID != "cus_7" || v.WorkflowURL != wantURL ||
		len(v.Payments) != 1 || v.Payments[0].ProviderID != "pi_"+idA || len(v.Refunds) != 1 || v.Refunds[0].AmountRequested != 300 ||
		len(v.Findings) != 1 || v.Findings[0].Kind != "refund_elsewhere" {
		t.Fatalf("by ID: %+v", v)
	}

	if code, views, errs = shown(t, key); code != 0 || len(views) != 2 || views[0].ID == views[1].ID ||
		(views[0].ID != idA && views[0].ID != idB) || (views[1].ID != idA && views[1].ID != idB) {
		t.Fatalf("by key in every tenant: exit %d, %+v\n%s", code, views, errs)
	}
	if code, views, _ = shown(t, key, "--tenant", b); code != 0 || len(views) != 1 || views[0].ID != idB || len(views[0].Refunds) != 0 {
		t.Fatalf("by key for one tenant: exit %d, %+v", code, views)
	}
	if code, _, errs = shown(t, idA, "--tenant", b); code != 1 || !strings.Contains(errs, "no order with ID or key") {
		t.Fatalf("another tenant's ID: exit %d\n%s", code, errs)
	}
	if code, _, errs = shown(t, "no-such-key-"+a); code != 1 || !strings.Contains(errs, "in any tenant") {
		t.Fatalf("unknown: exit %d\n%s", code, errs)
	}
}
