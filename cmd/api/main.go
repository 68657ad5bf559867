// Command api serves orderflow's HTTP API.
//
//	api                                serve until SIGTERM, then drain
//	api migrate                        apply the database migrations and exit
//	api keys create --tenant T         print a new API key for tenant T (shown once)
//	api keys list --tenant T           list the tenant's keys (prefixes only)
//	api keys revoke KEY_PREFIX         revoke a key
//	api version                        print the build's version
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/webhooks"
	"github.com/orderflow/orderflow/internal/apikeys"
	"github.com/orderflow/orderflow/internal/ledger"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/platform"
	"github.com/orderflow/orderflow/internal/platform/cli"
	"github.com/orderflow/orderflow/internal/platform/telemetry"
	"github.com/orderflow/orderflow/internal/platform/tracing"
	"github.com/orderflow/orderflow/internal/provider"
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
	return cli.App{Name: "api", Summary: "orderflow's HTTP API", Stdout: stdout, Stderr: stderr, Commands: []cli.Command{
		{Summary: "serve the API until SIGTERM, then drain", Run: func(ctx context.Context, _ *flag.FlagSet) error {
			return serve(ctx, getenv, stdout)
		}},
		platform.MigrateCommand(getenv, stdout),
		{Name: "keys create", Args: "--tenant NAME", Summary: "print a new API key for the tenant, shown once (DATABASE_URL)", Flags: tenantFlag,
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				return keys(ctx, getenv, "create", *tenant, fs.Args(), stdout)
			}},
		{Name: "keys list", Args: "--tenant NAME", Summary: "list the tenant's keys by prefix (DATABASE_URL)", Flags: tenantFlag,
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				return keys(ctx, getenv, "list", *tenant, fs.Args(), stdout)
			}},
		{Name: "keys revoke", Args: "KEY_PREFIX", Summary: "revoke a key (DATABASE_URL, API_KEY_CACHE_TTL)",
			Run: func(ctx context.Context, fs *flag.FlagSet) error {
				return keys(ctx, getenv, "revoke", "", fs.Args(), stdout)
			}},
	}}
}

// serve runs the API.
func serve(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	c, err := loadConfig(getenv)
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
	reg := base.Registry
	purged := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "orderflow_idempotency_keys_purged_total", Help: "Expired idempotency records deleted.",
	})
	reg.MustRegister(purged)
	idem := idempotency.New(base.Pool, c.IdempotencyTTL, c.ReplayBytes)
	go idem.PurgeExpired(ctx, time.Minute, purged, logger)
	intents := provider.New(c.Payments, provider.Metered(traces.Transport(http.DefaultTransport), reg))
	var hooks http.Handler
	if len(c.WebhookSecrets) > 0 {
		store := webhooks.NewStore(base.Pool)
		go store.Purge(ctx, time.Hour, logger)
		if hooks, err = webhooks.New(webhooks.Deps{Secrets: c.WebhookSecrets, Store: store, Ledger: ledger.New(base.Pool),
			Orders: orderstore.New(base.Pool), Intents: intents, Temporal: base.Temporal, Logger: logger, Registry: reg}); err != nil {
			return err
		}
	} else {
		logger.Warn("PAYMENTS_WEBHOOK_SECRETS is not set: no webhook endpoint; orders waiting on their intent read it on a backoff")
	}
	handler := httpapi.NewServer(httpapi.Deps{
		Logger:   logger,
		Registry: reg,
		Keys:     apikeys.New(base.Pool, c.KeyCacheTTL),
		Intake: intake.NewAPI(intake.Setup{Pool: base.Pool, Temporal: base.Temporal, TaskQueue: c.TaskQueue,
			Policy: c.Policy, Logger: logger, Codec: base.Codec, Intents: intents}, idem),
		MaxBodyBytes: int64(c.MaxBodyBytes),
		Tracing:      traces,
		Webhooks:     hooks,
	})
	return httpapi.Serve(ctx, handler, reg, base.Ready, c.Serve, logger)
}
