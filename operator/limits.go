package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/orderflow/orderflow/tenants"

	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/tenants/quota"
)

// limitsSetCommand is `api limits set --tenant NAME --rate R --burst B`.
func limitsSetCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var tenant string
	var l quota.Limit
	return cli.Command{Name: "limits set", Args: "--tenant NAME --rate R --burst B", Summary: "give the tenant its own request budget (DATABASE_URL)",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&tenant, "tenant", "", "the tenant (required)")
			fs.Float64Var(&l.Rate, "rate", 0, "requests a second over the fleet (required)")
			fs.IntVar(&l.Burst, "burst", 0, "requests at once over the fleet (required)")
		},
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			return limits(ctx, getenv, "set", tenant, l, fs.Args(), cli.Table, stdout)
		}}
}

// limitsClearCommand is `api limits clear --tenant NAME`.
func limitsClearCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var tenant string
	return cli.Command{Name: "limits clear", Args: "--tenant NAME", Summary: "put the tenant back on the default budget (DATABASE_URL)",
		Flags: func(fs *flag.FlagSet) { keysTenantFlag(fs, &tenant) },
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			return limits(ctx, getenv, "clear", tenant, quota.Limit{}, fs.Args(), cli.Table, stdout)
		}}
}

// limitsListCommand is `api limits list [-o json]`.
func limitsListCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	var out cli.Format
	return cli.Command{Name: "limits list", Args: "[-o json]", Summary: "list the tenants with a budget of their own (DATABASE_URL)",
		Flags: func(fs *flag.FlagSet) { cli.OutputFlag(fs, &out) },
		Run: func(ctx context.Context, fs *flag.FlagSet) error {
			return limits(ctx, getenv, "list", "", quota.Limit{}, fs.Args(), out, stdout)
		}}
}

// limits is `api limits set|clear|list`: a tenant's own request budget, read by
// every process within TENANT_LIMITS_REFRESH. It reads DATABASE_URL.
func limits(ctx context.Context, getenv func(string) string, op, tenant string, l quota.Limit, args []string, out cli.Format, stdout io.Writer) error {
	switch {
	case len(args) > 0:
		return cli.Usagef("unexpected argument %q", args[0])
	case op != "list" && !tenants.Valid(tenant):
		return cli.Usagef("want --tenant NAME")
	case op == "set":
		if err := l.Valid(); err != nil {
			return cli.Usagef("want --rate over 0 and --burst of at least 1: %v", err)
		}
	}
	e := config.New(getenv)
	url := e.Required("DATABASE_URL")
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	pool, err := database.Open(ctx, url, 2, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	store := quota.NewStore(pool)
	switch op {
	case "set":
		if err := store.Set(ctx, tenant, l); err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s: %g requests a second, bursts of %d, over the fleet\n", tenant, l.Rate, l.Burst)
		return err
	case "clear":
		if err := store.Clear(ctx, tenant); err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s: back on the default (TENANT_RATE, TENANT_BURST)\n", tenant)
		return err
	}
	all, err := store.All(ctx)
	if err != nil {
		return err
	}
	return printLimits(stdout, all, out)
}

// limitJSON is a tenant's own budget as `limits list -o json` prints it.
type limitJSON struct {
	Tenant string  `json:"tenant"`
	Rate   float64 `json:"rate"`
	Burst  int     `json:"burst"`
}

func printLimits(w io.Writer, all map[string]quota.Limit, out cli.Format) error {
	rows := make([]limitJSON, 0, len(all))
	for _, t := range slices.Sorted(maps.Keys(all)) {
		rows = append(rows, limitJSON{Tenant: t, Rate: all[t].Rate, Burst: all[t].Burst})
	}
	if out == cli.JSON {
		return cli.WriteJSON(w, rows)
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "%s\t%g/s\tburst %d\n", r.Tenant, r.Rate, r.Burst); err != nil {
			return err
		}
	}
	return nil
}
