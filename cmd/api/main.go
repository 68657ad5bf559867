// Command api serves orderflow's HTTP API.
//
//	api                                serve until SIGTERM, then drain
//	api migrate                        apply the database migrations and exit
//	api keys create --tenant T         print a new API key for tenant T (shown once)
//	api keys list --tenant T [-o json] list the tenant's keys (prefixes only)
//	api keys revoke KEY_PREFIX         revoke a key
//	api limits set --tenant T --rate R --burst B   the tenant's own request budget
//	api limits clear --tenant T        back to the default budget
//	api limits list [-o json]          the tenants with a budget of their own
//	api version                        print the build's version
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/platform"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/telemetry"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/settings"
	"github.com/orderflow/orderflow/tenants/quota"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app(os.Getenv, os.Stdout, os.Stderr).Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// app is the api binary's commands; each reads only the settings it uses.
func app(getenv func(string) string, stdout, stderr io.Writer) cli.App {
	var tenant *string
	tenantFlag := func(fs *flag.FlagSet) { tenant = fs.String("tenant", "", "the tenant the keys belong to (required)") }
	var out cli.Format
	listFlags := func(fs *flag.FlagSet) { tenantFlag(fs); cli.OutputFlag(fs, &out) }
	var rate *float64
	var burst *int
	limitFlags := func(fs *flag.FlagSet) {
		tenant = fs.String("tenant", "", "the tenant (required)")
		rate = fs.Float64("rate", 0, "requests a second over the fleet (required)")
		burst = fs.Int("burst", 0, "requests at once over the fleet (required)")
	}
	return cli.App{Name: "api", Summary: "orderflow's HTTP API", Stdout: stdout, Stderr: stderr, Commands: []cli.Command{
		{Summary: "serve the API until SIGTERM, then drain", Run: func(ctx context.Context, _ *flag.FlagSet) error {
			return serve(ctx, getenv, stdout)
		}},
		platform.MigrateCommand(getenv, stdout),
		{Name: "keys create", Args: "--tenant NAME", Summary: "print a new API key for the tenant, shown once (DATABASE_URL)", Flags: tenantFlag,
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				return keys(ctx, getenv, "create", *tenant, fs.Args(), cli.Table, stdout)
			}},
		{Name: "keys list", Args: "--tenant NAME [-o json]", Summary: "list the tenant's keys by prefix (DATABASE_URL)", Flags: listFlags,
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				return keys(ctx, getenv, "list", *tenant, fs.Args(), out, stdout)
			}},
		{Name: "keys revoke", Args: "KEY_PREFIX", Summary: "revoke a key (DATABASE_URL, API_KEY_CACHE_TTL)",
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				return keys(ctx, getenv, "revoke", "", fs.Args(), cli.Table, stdout)
			}},
		{Name: "limits set", Args: "--tenant NAME --rate R --burst B", Summary: "give the tenant its own request budget (DATABASE_URL)", Flags: limitFlags,
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				return limits(ctx, getenv, "set", *tenant, quota.Limit{Rate: *rate, Burst: *burst}, fs.Args(), cli.Table, stdout)
			}},
		{Name: "limits clear", Args: "--tenant NAME", Summary: "put the tenant back on the default budget (DATABASE_URL)", Flags: tenantFlag,
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				return limits(ctx, getenv, "clear", *tenant, quota.Limit{}, fs.Args(), cli.Table, stdout)
			}},
		{Name: "limits list", Args: "[-o json]", Summary: "list the tenants with a budget of their own (DATABASE_URL)",
			Flags: func(fs *flag.FlagSet) { cli.OutputFlag(fs, &out) },
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				return limits(ctx, getenv, "list", "", quota.Limit{}, fs.Args(), out, stdout)
			}},
	}}
}

// serve runs the API.
func serve(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	c, err := settings.LoadAPI(config.New(getenv))
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := telemetry.NewLogger(stdout, c.LogLevel)
	traces, err := tracing.FromEnv(ctx, "orderflow-api", getenv)
	if err != nil {
		return err
	}
	defer traces.Flush(logger) // last: spans of the stop are sent too
	base, err := platform.Open(ctx, c.Common, traces, logger)
	if err != nil {
		return err
	}
	defer base.Close() // after the server has drained
	handler, err := newHandler(ctx, c, base, traces, logger)
	if err != nil {
		return err
	}
	return httpapi.Serve(ctx, handler, base.Registry, base.Ready, c.Serve, logger)
}
