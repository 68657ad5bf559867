// Package platform opens what every orderflow process stands on: the Postgres pool
// and the Temporal client, from the common settings.
package platform

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"

	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/patience"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/telemetry"
	"github.com/orderflow/orderflow/platform/temporalclient"
	"github.com/orderflow/orderflow/platform/tracing"
)

// Base is a process's connections and its readiness, which checks both.
type Base struct {
	Pool     *pgxpool.Pool
	Temporal client.Client
	Codec    *payloadcodec.Codec // the Temporal client's payload encryption
	Ready    *telemetry.Readiness
	// Registry holds the process's metrics, the Temporal SDK's among them.
	Registry *prometheus.Registry
}

// dialPatience is how long a starting process waits for PostgreSQL and
// Temporal's frontend to answer: the minute its deployment's startup probe gives
// it.
const dialPatience = time.Minute

// Open connects to Postgres and Temporal, both traced through t.
func Open(ctx context.Context, c config.Common, t *tracing.Tracing, logger *slog.Logger) (*Base, error) {
	if c.DBMaxConns < 0 || c.DBMaxConns > math.MaxInt32 {
		return nil, fmt.Errorf("DB_MAX_CONNS=%d: out of range", c.DBMaxConns)
	}
	maxConns := int32(c.DBMaxConns)
	give := time.Now().Add(dialPatience) // one minute for both
	var pool *pgxpool.Pool
	err := patience.Do(ctx, dialPatience, logger, "postgres", database.Unanswered, func() (err error) {
		pool, err = database.Open(ctx, c.DatabaseURL, maxConns, t.Pgx())
		return err
	})
	if err != nil {
		return nil, err
	}
	codec := payloadcodec.New(c.PayloadKeys)
	reg := telemetry.NewRegistry()
	sdkMetrics, err := telemetry.SDKMetrics(reg, logger)
	if err != nil {
		pool.Close()
		return nil, err
	}
	traced, err := t.Temporal()
	if err != nil {
		pool.Close()
		return nil, err
	}
	tc, err := temporalclient.DialWithin(ctx, temporalclient.Settings{
		Connection: c.Temporal, Codec: codec, Metrics: sdkMetrics,
		Interceptors: []interceptor.ClientInterceptor{traced}, Logger: logger,
	}, time.Until(give))
	if err != nil {
		pool.Close()
		return nil, err
	}
	ready := &telemetry.Readiness{}
	reg.MustRegister(ready.Collector())
	// Shown, not gating: the worker gates on them (it can do nothing without
	// them); the API answers 503 with Retry-After itself.
	ready.Report("postgres", pool.Ping)
	ready.Report("temporal", temporalclient.Check(tc))
	return &Base{Pool: pool, Temporal: tc, Codec: codec, Ready: ready, Registry: reg}, nil
}

// Close closes the Temporal client, then the pool: the pool last, since everything
// else may still write.
func (b *Base) Close() {
	b.Temporal.Close()
	b.Pool.Close()
}

// MigrateCommand is the binaries' `migrate`: it applies the database migrations
// and reads DATABASE_URL and LOG_LEVEL, nothing else.
func MigrateCommand(getenv func(string) string, stdout io.Writer) cli.Command {
	return cli.Command{Name: "migrate", Summary: "apply the database migrations and exit (DATABASE_URL)",
		Run: func(ctx context.Context, _ *flag.FlagSet) error {
			e := config.New(getenv)
			url, logger := e.Required("DATABASE_URL"), telemetry.NewLogger(stdout, e.Level())
			if err := e.Err(); err != nil {
				return fmt.Errorf("configuration: %w", err)
			}
			return database.MigrateURL(ctx, url, logger)
		}}
}
