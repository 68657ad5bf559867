// Package config reads typed settings from environment variables, collecting every
// bad value so a misconfigured process reports all of them at once.
package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow/orderflow/internal/fairness"
	"github.com/orderflow/orderflow/internal/platform/kafkaclient"
	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
	"github.com/orderflow/orderflow/internal/platform/temporalclient"
	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/internal/quota"
	"go.temporal.io/sdk/client"
)

// Env reads settings from a getenv function (os.Getenv in mains, a map in tests).
type Env struct {
	getenv func(string) string
	errs   []error
}

// New returns an Env reading from getenv.
func New(getenv func(string) string) *Env {
	return &Env{getenv: getenv}
}

// String returns the variable, or def when it is unset or empty.
func (e *Env) String(key, def string) string {
	if v := strings.TrimSpace(e.getenv(key)); v != "" {
		return v
	}
	return def
}

// Required returns the variable and records an error when it is missing.
func (e *Env) Required(key string) string {
	v := e.String(key, "")
	if v == "" {
		e.errs = append(e.errs, fmt.Errorf("%s is required", key))
	}
	return v
}

// Int returns the variable as a positive integer, or def.
func (e *Env) Int(key string, def int) int {
	v := e.String(key, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a positive integer", key, v))
		return def
	}
	return n
}

// Count returns the variable as a non-negative integer, or def: 0 means none.
func (e *Env) Count(key string, def int) int {
	v := e.String(key, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want 0 or a positive integer", key, v))
		return def
	}
	return n
}

// Duration returns the variable as a non-negative Go duration ("25s", "1m"), or def.
func (e *Env) Duration(key string, def time.Duration) time.Duration {
	v := e.String(key, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a duration such as 25s", key, v))
		return def
	}
	return d
}

// Bool returns the variable as Go parses a boolean (1, t, true, 0, f, false...),
// or def.
func (e *Env) Bool(key string, def bool) bool {
	v := e.String(key, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want true or false", key, v))
		return def
	}
	return b
}

// Reconcile is the reconciler's schedule and policy: RECONCILE_INTERVAL (between
// passes, and how long an order stays unsettled before its workflow is looked at)
// and RECONCILE_REFUND_ORPHANS.
func (e *Env) Reconcile() (interval time.Duration, refundOrphans bool) {
	interval = e.Duration("RECONCILE_INTERVAL", time.Minute)
	if interval < time.Second {
		e.errs = append(e.errs, fmt.Errorf("RECONCILE_INTERVAL=%s: want a second or more", interval))
	}
	return interval, e.Bool("RECONCILE_REFUND_ORPHANS", true)
}

// List returns the comma-separated variable, or def split the same way.
func (e *Env) List(key, def string) []string {
	var out []string
	for _, s := range strings.Split(e.String(key, def), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Err reports every invalid or missing variable seen so far.
func (e *Env) Err() error {
	return errors.Join(e.errs...)
}

// Common are the settings every orderflow process reads, with their defaults.
type Common struct {
	DatabaseURL string
	DBMaxConns  int
	// Temporal is the connection to Temporal (temporalclient.LoadConnection).
	Temporal          client.Options
	TemporalNamespace string
	TaskQueue         string
	// Fairness weighs the tenants' shares of the task queues (FAIRNESS_WEIGHTS).
	Fairness fairness.Weights
	// TenantLimit is every tenant's request budget unless it has its own
	// (TENANT_RATE, TENANT_BURST); this process enforces 1/TenantLimitShares of
	// each, and reads the tenants' own every TenantLimitsRefresh.
	TenantLimit         quota.Limit
	TenantLimitShares   int
	TenantLimitsRefresh time.Duration
	ShutdownTimeout     time.Duration
	LogLevel            string
	// PayloadKeys encrypt what goes into Temporal's history (secret: never logged).
	PayloadKeys *payloadcodec.Keyring
}

// Common reads the shared settings.
func (e *Env) Common() Common {
	c := Common{
		DatabaseURL:     e.Required("DATABASE_URL"),
		DBMaxConns:      e.Int("DB_MAX_CONNS", 20),
		Temporal:        e.Temporal(),
		TaskQueue:       e.String("TASK_QUEUE", "orders"),
		ShutdownTimeout: e.Duration("SHUTDOWN_TIMEOUT", 25*time.Second),
		LogLevel:        e.String("LOG_LEVEL", "info"),
		PayloadKeys:     e.keyring("PAYLOAD_KEYS"),
	}
	c.TemporalNamespace = c.Temporal.Namespace
	var err error
	c.Fairness, err = fairness.Parse(e.String("FAIRNESS_WEIGHTS", ""))
	e.Invalid(err)
	c.TenantLimit = quota.Limit{Rate: float64(e.Int("TENANT_RATE", 100)), Burst: e.Int("TENANT_BURST", 200)}
	c.TenantLimitShares = e.Int("TENANT_LIMIT_SHARES", 1)
	c.TenantLimitsRefresh = e.Duration("TENANT_LIMITS_REFRESH", 30*time.Second)
	if err := c.TenantLimit.Valid(); err != nil {
		e.Invalid(fmt.Errorf("TENANT_RATE, TENANT_BURST: %w", err))
	}
	if c.TenantLimitShares < 1 {
		e.Invalid(fmt.Errorf("TENANT_LIMIT_SHARES must be at least 1, not %d", c.TenantLimitShares))
	}
	return c
}

// Invalid records err (if not nil) among the errors Err reports: a setting whose
// value its reader refused.
func (e *Env) Invalid(err error) {
	if err != nil {
		e.errs = append(e.errs, err)
	}
}

// Payments reads how to reach the payment provider (PAYMENTS_URL,
// PAYMENTS_API_KEY, PAYMENTS_TIMEOUT, PAYMENTS_RETURN_URL).
func (e *Env) Payments(timeout time.Duration) provider.Config {
	return provider.Config{
		URL: e.String("PAYMENTS_URL", "http://127.0.0.1:8099"), APIKey: e.String("PAYMENTS_API_KEY", ""),
		Timeout: e.Duration("PAYMENTS_TIMEOUT", timeout), ReturnURL: e.String("PAYMENTS_RETURN_URL", ""),
	}
}

// Temporal reads the Temporal connection as Temporal's tools do (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_TLS_*, TEMPORAL_API_KEY, TEMPORAL_PROFILE...).
func (e *Env) Temporal() client.Options {
	conn, err := temporalclient.LoadConnection(func(k string) (string, bool) {
		v := e.getenv(k)
		return v, v != ""
	})
	if err != nil {
		e.errs = append(e.errs, err)
	}
	return conn
}

// Kafka reads the brokers and the cluster's security (KAFKA_BROKERS, KAFKA_TLS,
// KAFKA_TLS_CA_PATH, KAFKA_TLS_CERT_PATH, KAFKA_TLS_KEY_PATH, KAFKA_TLS_SERVER_NAME,
// KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD).
func (e *Env) Kafka() kafkaclient.Cluster {
	tlsOn := e.String("KAFKA_TLS", "false")
	c, err := kafkaclient.NewCluster(e.List("KAFKA_BROKERS", "127.0.0.1:9092"), kafkaclient.Security{
		TLS: tlsOn == "true" || tlsOn == "1", CAPath: e.String("KAFKA_TLS_CA_PATH", ""),
		CertPath: e.String("KAFKA_TLS_CERT_PATH", ""), KeyPath: e.String("KAFKA_TLS_KEY_PATH", ""),
		ServerName: e.String("KAFKA_TLS_SERVER_NAME", ""), Mechanism: e.String("KAFKA_SASL_MECHANISM", ""),
		Username: e.String("KAFKA_SASL_USERNAME", ""), Password: e.String("KAFKA_SASL_PASSWORD", ""),
	})
	if err != nil {
		e.errs = append(e.errs, err)
	}
	return c
}

// keyring reads a required payload keyring; the error never quotes the value.
func (e *Env) keyring(key string) *payloadcodec.Keyring {
	spec := e.Required(key)
	if spec == "" {
		return nil
	}
	ring, err := payloadcodec.ParseKeyring(spec)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s: %w", key, err))
	}
	return ring
}
