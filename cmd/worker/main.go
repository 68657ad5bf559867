// Command worker runs orderflow's Temporal worker (OrderWorkflow and its activities)
// and serves /healthz, /readyz and /metrics.
//
//	worker            run until SIGTERM, then drain
//	worker migrate    apply the database migrations and exit
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/internal/config"
	"github.com/orderflow/orderflow/internal/database"
	"github.com/orderflow/orderflow/internal/payments"
	"github.com/orderflow/orderflow/internal/telemetry"
	"github.com/orderflow/orderflow/internal/temporalclient"
	"github.com/orderflow/orderflow/worker"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

type cfg struct {
	DatabaseURL       string
	DBMaxConns        int
	TemporalAddress   string
	TemporalNamespace string
	Worker            worker.Options
	KafkaBrokers      []string
	EventsTopic       string
	PaymentsURL       string
	PaymentsAPIKey    string
	PaymentsTimeout   time.Duration
	OpsAddr           string
	ShutdownTimeout   time.Duration
	LogLevel          string
}

func loadConfig(getenv func(string) string) (cfg, error) {
	e := config.New(getenv)
	c := cfg{
		DatabaseURL:       e.Required("DATABASE_URL"),
		DBMaxConns:        e.Int("DB_MAX_CONNS", 20),
		TemporalAddress:   e.String("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		TemporalNamespace: e.String("TEMPORAL_NAMESPACE", "default"),
		Worker: worker.Options{
			TaskQueue:                  e.String("TASK_QUEUE", "orders"),
			MaxConcurrentActivities:    e.Int("MAX_CONCURRENT_ACTIVITIES", 100),
			MaxConcurrentWorkflowTasks: e.Int("MAX_CONCURRENT_WORKFLOW_TASKS", 50),
			StopTimeout:                e.Duration("WORKER_STOP_TIMEOUT", 15*time.Second),
		},
		KafkaBrokers:    e.List("KAFKA_BROKERS", "127.0.0.1:9092"),
		EventsTopic:     e.String("EVENTS_TOPIC", "orders.events"),
		PaymentsURL:     e.String("PAYMENTS_URL", "http://127.0.0.1:8099"),
		PaymentsAPIKey:  e.String("PAYMENTS_API_KEY", ""),
		PaymentsTimeout: e.Duration("PAYMENTS_TIMEOUT", 10*time.Second),
		OpsAddr:         e.String("OPS_ADDR", ":9090"),
		ShutdownTimeout: e.Duration("SHUTDOWN_TIMEOUT", 25*time.Second),
		LogLevel:        e.String("LOG_LEVEL", "info"),
	}
	if err := e.Err(); err != nil {
		return c, err
	}
	if c.Worker.StopTimeout >= c.ShutdownTimeout {
		return c, fmt.Errorf("WORKER_STOP_TIMEOUT (%s) must be shorter than SHUTDOWN_TIMEOUT (%s)", c.Worker.StopTimeout, c.ShutdownTimeout)
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
	cmd := ""
	if len(args) > 1 {
		cmd = args[1]
	}
	switch cmd {
	case "":
		return serve(ctx, c, logger)
	case "migrate":
		pool, err := database.Open(ctx, c.DatabaseURL, 2)
		if err != nil {
			return err
		}
		defer pool.Close()
		return database.Migrate(ctx, pool, logger)
	default:
		return fmt.Errorf("unknown command %q (want no argument or \"migrate\")", cmd)
	}
}

func serve(ctx context.Context, c cfg, logger *slog.Logger) error {
	pool, err := database.Open(ctx, c.DatabaseURL, int32(c.DBMaxConns))
	if err != nil {
		return err
	}
	defer pool.Close() // last: everything above may still write

	tc, err := temporalclient.Dial(ctx, c.TemporalAddress, c.TemporalNamespace, logger)
	if err != nil {
		return err
	}
	defer tc.Close()

	writer := activities.NewWriter(c.KafkaBrokers, c.EventsTopic)
	w := worker.New(tc, c.Worker, worker.Activities{
		Orders:   activities.NewOrders(pool),
		Payments: activities.NewPayments(pool, payments.New(c.PaymentsURL, c.PaymentsAPIKey, c.PaymentsTimeout)),
		Events:   activities.NewEvents(writer),
	})

	reg := telemetry.NewRegistry()
	shutdownSeconds := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "orderflow_worker_shutdown_duration_seconds",
		Help: "How long the last drain took, from SIGTERM to the pool closing.",
	})
	reg.MustRegister(shutdownSeconds)
	ready := &telemetry.Readiness{}
	ready.Add("postgres", pool.Ping)
	ready.Add("temporal", temporalclient.Check(tc))

	mux := http.NewServeMux()
	telemetry.Mount(mux, reg, ready)
	ln, err := net.Listen("tcp", c.OpsAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.OpsAddr, err)
	}
	ops := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	opsErr := make(chan error, 1)
	go func() { opsErr <- ops.Serve(ln) }()

	if err := w.Start(); err != nil {
		_ = ops.Close()
		return fmt.Errorf("start temporal worker: %w", err)
	}
	logger.Info("worker started", "task_queue", c.Worker.TaskQueue, "ops", ln.Addr().String())

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("draining", "budget", c.ShutdownTimeout.String())
	case err := <-opsErr:
		runErr = fmt.Errorf("ops server: %w", err)
	}

	// Ordered stop under one deadline; the signal context is already cancelled.
	began := time.Now()
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	ready.Drain()
	w.Stop() // waits up to WORKER_STOP_TIMEOUT for running activities
	if err := closeWithin(sctx, writer.Close); err != nil {
		logger.Error("kafka writer not flushed", "err", err)
	}
	shutdownSeconds.Set(time.Since(began).Seconds())
	if err := ops.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Warn("ops server shutdown", "err", err)
	}
	logger.Info("stopped", "took", time.Since(began).String())
	return runErr
}

// closeWithin runs close but gives up at the deadline: kafka-go's Close can hang.
func closeWithin(ctx context.Context, close func() error) error {
	done := make(chan error, 1)
	go func() { done <- close() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("abandoned at the shutdown deadline: %w", ctx.Err())
	}
}
