package orderflow

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/ingress/refunds"
	"github.com/orderflow/orderflow/ingress/webhooks"
	"github.com/orderflow/orderflow/operator"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform"
	"github.com/orderflow/orderflow/platform/backlog"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/records"
	"github.com/orderflow/orderflow/platform/telemetry"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/settings"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/fairness"
	"github.com/orderflow/orderflow/tenants/fleetrate"
	"github.com/orderflow/orderflow/tenants/quota"
	"github.com/orderflow/orderflow/workflows"
)

// API is the api binary, serving orders, refunds and kinds: serve (its default
// command) and migrate, then the operator's commands; each reads only the
// settings it uses.
func API(getenv func(string) string, stdout, stderr io.Writer, kinds ...Kind) cli.App {
	kinds = append([]Kind{erasures{}}, kinds...)
	commands := []cli.Command{
		{Summary: "serve the API until SIGTERM, then drain", Run: func(ctx context.Context, _ *flag.FlagSet) error {
			return serveAPI(ctx, getenv, stdout, kinds)
		}},
		platform.MigrateCommand(getenv, stdout),
	}
	commands = append(commands, operator.APICommands(getenv, stdout, stderr)...)
	return cli.App{Name: "api", Summary: "orderflow's HTTP API", Stdout: stdout, Stderr: stderr, Commands: commands}
}

// serveAPI runs the API.
func serveAPI(ctx context.Context, getenv func(string) string, stdout io.Writer, kinds []Kind) error {
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
	handler, err := newHandler(ctx, c, base, traces, logger, kinds, getenv)
	if err != nil {
		return err
	}
	return httpapi.Serve(ctx, handler, base.Registry, base.Ready, c.Serve, logger)
}

// newHandler builds the API's handler tree on the process's connections. The
// workers prune what its stores leave (worker/retention).
func newHandler(ctx context.Context, c settings.API, base *platform.Base, traces *tracing.Tracing, logger *slog.Logger,
	kinds []Kind, getenv func(string) string) (http.Handler, error) {
	reg := base.Registry
	idem := idempotency.New(base.Pool, c.IdempotencyTTL, c.ReplayBytes)
	// The API's reads share the workers' budget: each order's in its tenant's
	// share, with its weight; webhooks in a lane of their own (weight 1).
	intents := provider.New(c.Payments, provider.Budgeted(provider.Metered(traces.Transport(http.DefaultTransport), reg),
		provider.AccountPace(fleetrate.New(base.Pool), c.Payments), c.Fairness.Weight))
	hooks, err := newWebhooks(c, base, intents, logger)
	if err != nil {
		return nil, err
	}
	limits, err := quota.NewLimiter("api", c.TenantLimit, fleetrate.New(base.Pool))
	if err != nil {
		return nil, err
	}
	go limits.Refresh(ctx, quota.NewStore(base.Pool), c.TenantLimitsRefresh, logger)
	customers, err := custkeys.Open(ctx, base.Pool, base.Codec)
	if err != nil {
		return nil, err
	}
	setup := intake.Setup{Pool: base.Pool, Temporal: base.Temporal, TaskQueue: c.TaskQueue, Fairness: c.Fairness,
		Logger: logger, Codec: base.Codec, Customers: customers, Waited: true}
	orderAPI := orders.NewAPI(setup, idem, c.Policy, intents)
	p := Platform{Pool: base.Pool, Temporal: base.Temporal, Starter: setup.Starter(), Records: records.NewStore(base.Pool),
		Logger: logger, Getenv: getenv, Customers: customers}
	kindRoutes, err := routes(kinds, p)
	if err != nil {
		return nil, err
	}
	shed := c.Shed
	fleet, err := startBacklog(ctx, c.Common, c.Fairness, base, logger)
	if err != nil {
		return nil, err
	}
	if fleet != nil { // not a typed nil in the interface
		shed.Backlog, shed.Held = fleet, idem
	}
	d := httpapi.Deps{
		Logger: logger, Registry: reg, Keys: apikeys.New(base.Pool, c.KeyCacheTTL), Proxies: c.Proxies,
		Intake:  orderAPI,
		Refunds: refunds.NewService(refunds.New(orderstore.New(base.Pool), refundstore.New(base.Pool), setup.Starter()), orderAPI),
		Quota:   limits, Shed: shed, ProblemBase: c.ProblemBase, MaxBodyBytes: int64(c.MaxBodyBytes), Tracing: traces,
		Webhooks: hooks, Kinds: kindRoutes, Keyed: orderAPI, Personal: customers,
	}
	if err := httpapi.CheckKinds(d); err != nil {
		return nil, err
	}
	return httpapi.NewServer(d), nil
}

// startBacklog keeps the fleet's backlog current for the ingresses to admit by,
// shared among the tenants by their fairness weights (nil: BACKLOG_ACCEPT is 0,
// no bound).
func startBacklog(ctx context.Context, c config.Common, weights fairness.Weights, base *platform.Base, logger *slog.Logger) (*backlog.Gauge, error) {
	if c.Backlog.Accept <= 0 {
		return nil, nil
	}
	o := c.Backlog
	o.AtWork, o.Working, o.TenantAttribute, o.Weight = workflows.AtWork, workflows.Working, workflows.SearchTenant, weights.Weight
	g, err := backlog.New(base.Temporal, o, time.Now)
	if err != nil {
		return nil, err
	}
	if err := g.Register(base.Registry); err != nil {
		return nil, err
	}
	go g.Run(ctx, logger)
	return g, nil
}

// newWebhooks is the provider's webhook endpoint, or none without secrets.
func newWebhooks(c settings.API, base *platform.Base, intents *provider.Client, logger *slog.Logger) (http.Handler, error) {
	if len(c.WebhookSecrets) == 0 {
		logger.Warn("PAYMENTS_WEBHOOK_SECRETS is not set: no webhook endpoint; orders waiting on their intent read it on a backoff")
		return nil, nil
	}
	return webhooks.New(webhooks.Deps{Secrets: c.WebhookSecrets, Store: webhooks.NewStore(base.Pool), Ledger: ledger.New(base.Pool),
		Orders: orderstore.New(base.Pool), Intents: intents, Temporal: base.Temporal, TaskQueue: c.TaskQueue, Fairness: c.Fairness,
		Logger: logger, Registry: base.Registry, ProblemBase: c.ProblemBase})
}
