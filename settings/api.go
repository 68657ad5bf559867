// Package settings is what each binary reads from its environment, and the table
// of docs/configuration.md made from those readers.
package settings

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/workflows"
)

// API is the API's configuration.
type API struct {
	config.Common
	Tenants
	Policy         workflows.Policy
	Serve          httpapi.ServeOptions
	IdempotencyTTL time.Duration
	ReplayBytes    int
	MaxBodyBytes   int
	KeyCacheTTL    time.Duration
	// Proxies are the proxies trusted to name the client (TRUSTED_PROXIES) and
	// the one header they append it to (TRUSTED_PROXY_HEADER).
	Proxies httpapi.Proxies
	// Payments reads intents: for webhooks and the next action of an order that
	// waits on its customer.
	Payments       provider.Config
	WebhookSecrets []string
	// ProblemBase is where the problem types are documented: each type's URL is
	// it and the kind.
	ProblemBase string
	// Shed bounds the POSTs one process takes on at once; above them, 503.
	Shed httpapi.ShedLimits
}

// LoadAPI reads the API's settings, reporting every bad one at once.
func LoadAPI(e *config.Env) (API, error) {
	c := API{Common: e.Common(), Tenants: readTenants(e), Policy: orders.PolicyFromEnv(e), IdempotencyTTL: e.Duration("IDEMPOTENCY_TTL", 24*time.Hour),
		ReplayBytes: e.Int("REPLAY_CACHE_BYTES", idempotency.DefaultReplayBytes), MaxBodyBytes: e.Int("MAX_BODY_BYTES", 64<<10),
		KeyCacheTTL: e.Duration("API_KEY_CACHE_TTL", apikeys.DefaultCacheTTL),
		Payments:    payments(e, 5*time.Second), WebhookSecrets: e.List("PAYMENTS_WEBHOOK_SECRETS", "")}
	var err error
	c.Proxies, err = httpapi.ParseProxies(e.List("TRUSTED_PROXIES", ""), e.String("TRUSTED_PROXY_HEADER", httpapi.HeaderXForwardedFor))
	e.Invalid(err)
	c.ProblemBase = e.String("PROBLEM_BASE_URL", httpapi.DefaultProblemBase)
	c.Shed = httpapi.ShedLimits{Posts: e.Int("SHED_MAX_POSTS", 256), Waiters: e.Int("SHED_MAX_WAITERS", 512)}
	if u, err := url.Parse(c.ProblemBase); err != nil || !u.IsAbs() || u.Host == "" || !strings.HasSuffix(c.ProblemBase, "/") && !strings.HasSuffix(c.ProblemBase, "#") {
		e.Invalid(fmt.Errorf("PROBLEM_BASE_URL=%q: want an absolute URL ending in / or #", c.ProblemBase))
	}
	c.Serve = httpapi.ServeOptions{Addr: e.String("API_ADDR", ":8080"), OpsAddr: e.String("OPS_ADDR", ":9091"), DrainDelay: e.Duration("DRAIN_DELAY", 2*time.Second), ShutdownTimeout: c.ShutdownTimeout}
	if c.IdempotencyTTL < 24*time.Hour {
		// A client's retries of a day, and the provider's own keys (Stripe keeps
		// them 24 h), must land on the record.
		e.Invalid(fmt.Errorf("IDEMPOTENCY_TTL=%s: at least 24h", c.IdempotencyTTL))
	}
	if err := e.Err(); err != nil {
		return c, err
	}
	if c.Serve.DrainDelay+intake.StartBudget > c.ShutdownTimeout {
		// A placement under way at SIGTERM must finish, or release its key.
		return c, fmt.Errorf("SHUTDOWN_TIMEOUT (%s) must cover DRAIN_DELAY (%s) and a placement's start budget (%s)",
			c.ShutdownTimeout, c.Serve.DrainDelay, intake.StartBudget)
	}
	return c, nil
}
