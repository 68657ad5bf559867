package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/quota"
)

// tenantsListCommand is `worker tenants list [-o json]`.
func tenantsListCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var out cli.Format
	return cli.Command{Name: "tenants list", Args: "[-o json]",
		Summary: "list every tenant with its active keys, its own budget if any, its orders and its last order (DATABASE_URL)",
		Flags:   func(fs *flag.FlagSet) { cli.OutputFlag(fs, &out) },
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			if fs.NArg() > 0 {
				return cli.Usagef("unexpected argument %q", fs.Arg(0))
			}
			return tenantsList(ctx, getenv, out, stdout)
		}}
}

// tenantJSON is a tenant as tenants list prints it. Rate and Burst are its own
// budget's, null on the default (TENANT_RATE, TENANT_BURST).
type tenantJSON struct {
	Tenant     string     `json:"tenant"`
	ActiveKeys int        `json:"active_keys"`
	OwnBudget  bool       `json:"own_budget"`
	Rate       *float64   `json:"rate"`
	Burst      *int       `json:"burst"`
	Orders     int        `json:"orders"`
	LastOrder  *time.Time `json:"last_order_at"`
}

// tenantSources is what each owning store knows of the tenants.
type tenantSources struct {
	keys   map[string]int
	limits map[string]quota.Limit
	orders map[string]orderstore.TenantOrders
}

func tenantsList(ctx context.Context, getenv func(string) string, out cli.Format, stdout io.Writer) error {
	pool, err := openDatabase(ctx, getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	var src tenantSources
	if src.keys, err = apikeys.New(pool, apikeys.DefaultCacheTTL).ActiveKeys(ctx); err != nil {
		return err
	}
	if src.limits, err = quota.NewStore(pool).All(ctx); err != nil {
		return err
	}
	if src.orders, err = orderstore.New(pool).Tenants(ctx); err != nil {
		return err
	}
	rows := tenantRows(src)
	if out == cli.JSON {
		return cli.WriteJSON(stdout, rows)
	}
	return tenantsTable(stdout, rows)
}

// tenantRows merges the sources: one row per tenant any of them names, by name.
func tenantRows(src tenantSources) []tenantJSON {
	names := map[string]bool{}
	for _, m := range []func(yield func(string) bool){maps.Keys(src.keys), maps.Keys(src.limits), maps.Keys(src.orders)} {
		for n := range m {
			names[n] = true
		}
	}
	rows := make([]tenantJSON, 0, len(names))
	for _, n := range slices.Sorted(maps.Keys(names)) {
		r := tenantJSON{Tenant: n, ActiveKeys: src.keys[n]}
		if l, ok := src.limits[n]; ok {
			r.OwnBudget, r.Rate, r.Burst = true, &l.Rate, &l.Burst
		}
		if o, ok := src.orders[n]; ok {
			last := o.LastOrder.UTC()
			r.Orders, r.LastOrder = o.Orders, &last
		}
		rows = append(rows, r)
	}
	return rows
}

func tenantsTable(w io.Writer, rows []tenantJSON) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tACTIVE KEYS\tBUDGET\tORDERS\tLAST ORDER")
	for _, r := range rows {
		budget, last := "default", "-"
		if r.OwnBudget {
			budget = fmt.Sprintf("%g/s burst %d", *r.Rate, *r.Burst)
		}
		if r.LastOrder != nil {
			last = stamp(*r.LastOrder)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", r.Tenant, r.ActiveKeys, budget, r.Orders, last)
	}
	return tw.Flush()
}
