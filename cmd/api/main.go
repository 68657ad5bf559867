// Command api serves orderflow's HTTP API.
//
//	api                          serve until SIGTERM, then drain
//	api migrate                  apply the database migrations and exit
//	api keys create --tenant T   print a new API key for tenant T (shown once)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/orderflow/orderflow/ingress/httpapi"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/internal/apikeys"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/platform/config"
	"github.com/orderflow/orderflow/internal/platform/database"
	"github.com/orderflow/orderflow/internal/platform/telemetry"
	"github.com/orderflow/orderflow/internal/platform/temporalclient"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

type cfg struct {
	Addr              string
	DatabaseURL       string
	DBMaxConns        int
	TemporalAddress   string
	TemporalNamespace string
	TaskQueue         string
	IdempotencyTTL    time.Duration
	CancelWindow      time.Duration
	MaxBodyBytes      int
	ShutdownTimeout   time.Duration
	DrainDelay        time.Duration
	LogLevel          string
}

func loadConfig(getenv func(string) string) (cfg, error) {
	e := config.New(getenv)
	c := cfg{
		Addr:              e.String("API_ADDR", ":8080"),
		DatabaseURL:       e.Required("DATABASE_URL"),
		DBMaxConns:        e.Int("DB_MAX_CONNS", 20),
		TemporalAddress:   e.String("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		TemporalNamespace: e.String("TEMPORAL_NAMESPACE", "default"),
		TaskQueue:         e.String("TASK_QUEUE", "orders"),
		IdempotencyTTL:    e.Duration("IDEMPOTENCY_TTL", 24*time.Hour),
		CancelWindow:      e.Duration("CANCEL_WINDOW", 0),
		MaxBodyBytes:      e.Int("MAX_BODY_BYTES", 64<<10),
		ShutdownTimeout:   e.Duration("SHUTDOWN_TIMEOUT", 25*time.Second),
		// Time for load balancers to see /readyz fail before the listener closes.
		DrainDelay: e.Duration("DRAIN_DELAY", 2*time.Second),
		LogLevel:   e.String("LOG_LEVEL", "info"),
	}
	if err := e.Err(); err != nil {
		return c, err
	}
	if c.DrainDelay >= c.ShutdownTimeout {
		return c, fmt.Errorf("DRAIN_DELAY (%s) must be shorter than SHUTDOWN_TIMEOUT (%s)", c.DrainDelay, c.ShutdownTimeout)
	}
	return c, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	c, err := loadConfig(getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := telemetry.NewLogger(stdout, c.LogLevel)
	if len(args) < 2 {
		return serve(ctx, c, logger)
	}
	switch args[1] {
	case "migrate":
		return database.MigrateURL(ctx, c.DatabaseURL, logger)
	case "keys":
		return keys(ctx, c, args[2:], stdout)
	default:
		return fmt.Errorf("unknown command %q (want migrate or keys)", args[1])
	}
}

func keys(ctx context.Context, c cfg, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: api keys create --tenant NAME")
	}
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant the key belongs to")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *tenant == "" {
		return errors.New("usage: api keys create --tenant NAME")
	}
	pool, err := database.Open(ctx, c.DatabaseURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	key, err := apikeys.New(pool).Create(ctx, *tenant)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, key)
	return err
}

func serve(ctx context.Context, c cfg, logger *slog.Logger) error {
	pool, err := database.Open(ctx, c.DatabaseURL, int32(c.DBMaxConns))
	if err != nil {
		return err
	}
	defer pool.Close() // last

	tc, err := temporalclient.Dial(ctx, c.TemporalAddress, c.TemporalNamespace, logger)
	if err != nil {
		return err
	}
	defer tc.Close() // after the server has drained

	reg := telemetry.NewRegistry()
	ready := &telemetry.Readiness{}
	ready.Add("postgres", pool.Ping)
	ready.Add("temporal", temporalclient.Check(tc))

	idem := idempotency.New(pool, c.IdempotencyTTL)
	handler := httpapi.NewServer(httpapi.Deps{
		Logger:       logger,
		Registry:     reg,
		Ready:        ready,
		Keys:         apikeys.New(pool),
		Idempotency:  idem,
		Orders:       orderstore.New(pool),
		Starter:      intake.NewStarter(tc, c.TaskQueue, c.CancelWindow),
		Updater:      tc,
		MaxBodyBytes: int64(c.MaxBodyBytes),
	})
	go purgeExpired(ctx, idem, logger)
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      45 * time.Second, // above the longest Prefer: wait (30 s)
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Addr, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("api listening", "addr", ln.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Drain: readiness off, a moment for load balancers, then finish in-flight requests.
	began := time.Now()
	ready.Drain()
	time.Sleep(c.DrainDelay)
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout-c.DrainDelay)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped", "took", time.Since(began).String())
	return nil
}

// purgeExpired deletes expired idempotency records in small batches until ctx ends.
// Correctness does not depend on it: an expired record is reclaimed on its next use.
func purgeExpired(ctx context.Context, idem *idempotency.Store, logger *slog.Logger) {
	t := time.NewTicker(5 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := idem.DeleteExpired(ctx, 1000)
			if err != nil && ctx.Err() == nil {
				logger.Warn("purge expired idempotency keys", "err", err)
			} else if n > 0 {
				logger.Info("purged expired idempotency keys", "count", n)
			}
		}
	}
}
