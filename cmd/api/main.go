// Command api serves orderflow's HTTP API.
//
//	api                          serve until SIGTERM, then drain
//	api migrate                  apply the database migrations and exit
//	api keys create --tenant T   print a new API key for tenant T (shown once)
package main

import (
	"context"
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
	"github.com/orderflow/orderflow/internal/platform/database"
	"github.com/orderflow/orderflow/internal/platform/telemetry"
	"github.com/orderflow/orderflow/internal/platform/tracing"
	"github.com/orderflow/orderflow/internal/provider"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := loadConfig(getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := telemetry.NewLogger(stdout, c.LogLevel)
	switch cmd := append(args, "")[1]; cmd {
	case "":
	case "migrate":
		return database.MigrateURL(ctx, c.DatabaseURL, logger)
	case "keys":
		return keys(ctx, c, args[2:], stdout)
	default:
		return fmt.Errorf("unknown command %q (want migrate or keys)", cmd)
	}

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
	intents := provider.New(c.Payments, traces.Transport(http.DefaultTransport))
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
