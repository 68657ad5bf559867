package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/ingress/refunds"
	"github.com/orderflow/orderflow/ingress/webhooks"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/settings"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/fleetrate"
	"github.com/orderflow/orderflow/tenants/quota"
)

// newHandler builds the API's handler tree on the process's connections. The
// workers prune what its stores leave (worker/retention).
func newHandler(ctx context.Context, c settings.API, base *platform.Base, traces *tracing.Tracing, logger *slog.Logger) (http.Handler, error) {
	reg := base.Registry
	idem := idempotency.New(base.Pool, c.IdempotencyTTL, c.ReplayBytes)
	// The API's reads share the workers' budget: each order's in its tenant's
	// share, with its weight; webhooks in a lane of their own (weight 1).
	intents := provider.New(c.Payments, provider.Budgeted(provider.Metered(traces.Transport(http.DefaultTransport), reg),
		provider.AccountPace(fleetrate.New(base.Pool), c.Payments), c.Fairness.Weight))
	var hooks http.Handler
	if len(c.WebhookSecrets) > 0 {
		store := webhooks.NewStore(base.Pool)
		var err error
		if hooks, err = webhooks.New(webhooks.Deps{Secrets: c.WebhookSecrets, Store: store, Ledger: ledger.New(base.Pool),
			Orders: orderstore.New(base.Pool), Intents: intents, Temporal: base.Temporal, TaskQueue: c.TaskQueue, Fairness: c.Fairness,
			Logger: logger, Registry: reg, ProblemBase: c.ProblemBase}); err != nil {
			return nil, err
		}
	} else {
		logger.Warn("PAYMENTS_WEBHOOK_SECRETS is not set: no webhook endpoint; orders waiting on their intent read it on a backoff")
	}
	limits, err := quota.NewLimiter("api", c.TenantLimit, fleetrate.New(base.Pool))
	if err != nil {
		return nil, err
	}
	go limits.Refresh(ctx, quota.NewStore(base.Pool), c.TenantLimitsRefresh, logger)
	setup := intake.Setup{Pool: base.Pool, Temporal: base.Temporal, TaskQueue: c.TaskQueue, Fairness: c.Fairness,
		Logger: logger, Codec: base.Codec}
	orderAPI := orders.NewAPI(setup, idem, c.Policy, intents)
	return httpapi.NewServer(httpapi.Deps{
		Logger:       logger,
		Registry:     reg,
		Keys:         apikeys.New(base.Pool, c.KeyCacheTTL),
		Proxies:      c.Proxies,
		Intake:       orderAPI,
		Refunds:      refunds.NewService(refunds.New(orderstore.New(base.Pool), refundstore.New(base.Pool), setup.Starter()), orderAPI),
		Quota:        limits,
		Shed:         c.Shed,
		ProblemBase:  c.ProblemBase,
		MaxBodyBytes: int64(c.MaxBodyBytes),
		Tracing:      traces,
		Webhooks:     hooks,
	}), nil
}
