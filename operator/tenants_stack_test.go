//go:build stack

package operator

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/quota"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// tenants list names a tenant known by its keys, one known by its budget and one
// known by its orders alone, each with what the owning tables hold of it.
func TestTenantsListCountsWhatEachTableHolds(t *testing.T) {
	ctx := context.Background()
	pool := stacktest.Pool(t)
	keyed, budgeted, ordered := stacktest.Name("keyed"), stacktest.Name("budgeted"), stacktest.Name("ordered")
	keys := apikeys.New(pool, 0)
	for range 3 {
		if _, err := keys.Create(ctx, keyed); err != nil {
			t.Fatal(err)
		}
	}
	listedKeys, err := keys.List(ctx, keyed)
	if err != nil || len(listedKeys) != 3 {
		t.Fatalf("keys: %v %v", listedKeys, err)
	}
	if err := keys.Revoke(ctx, listedKeys[0].Prefix); err != nil {
		t.Fatal(err)
	}
	if err := quota.NewStore(pool).Set(ctx, budgeted, quota.Limit{Rate: 7, Burst: 14}); err != nil {
		t.Fatal(err)
	}
	for i, at := range []string{"2026-01-01T00:00:00Z", "2026-02-03T04:05:06Z"} {
		if _, err := pool.Exec(ctx, `
			INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status, created_at)
			VALUES ($1, $2, $1, 'cus', '[]', 100, 'USD', 'PAID', $3)`, ordered+"-"+string(rune('a'+i)), ordered, at); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errs := run(t, "tenants", "list", "-o", "json")
	var rows []tenantJSON
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("tenants list: exit %d\n%s%s", code, out, errs)
	}
	byName := map[string]tenantJSON{}
	for _, r := range rows {
		byName[r.Tenant] = r
	}
	k, b, o := byName[keyed], byName[budgeted], byName[ordered]
	if k.Tenant == "" || k.ActiveKeys != 2 || k.OwnBudget || k.Orders != 0 || k.LastOrder != nil {
		t.Errorf("keyed tenant: %+v", k)
	}
	if b.Tenant == "" || !b.OwnBudget || *b.Rate != 7 || *b.Burst != 14 || b.ActiveKeys != 0 {
		t.Errorf("budgeted tenant: %+v", b)
	}
	if o.Tenant == "" || o.Orders != 2 || o.LastOrder == nil || o.LastOrder.Format("2006-01-02T15:04:05Z07:00") != "2026-02-03T04:05:06Z" {
		t.Errorf("ordered tenant: %+v", o)
	}
}
