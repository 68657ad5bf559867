// Command worker runs orderflow's Temporal worker (OrderWorkflow and its activities)
// and serves /healthz, /readyz and /metrics.
//
//	worker                                 run until SIGTERM, then drain
//	worker migrate                         apply the database migrations and exit
//	worker dlq redrive [--event-id ID]...  re-publish dead letters to their topic
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
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/internal/platform/config"
	"github.com/orderflow/orderflow/internal/platform/database"
	"github.com/orderflow/orderflow/internal/platform/telemetry"
	"github.com/orderflow/orderflow/internal/platform/temporalclient"
	"github.com/orderflow/orderflow/internal/provider"
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
	RequestsTopic     string
	DLQTopic          string
	Consumer          consumer.Options
	CancelWindow      time.Duration
	KafkaCloseTimeout time.Duration
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
		KafkaBrokers:  e.List("KAFKA_BROKERS", "127.0.0.1:9092"),
		EventsTopic:   e.String("EVENTS_TOPIC", "orders.events"),
		RequestsTopic: e.String("REQUESTS_TOPIC", "orders.requested"),
		DLQTopic:      e.String("DLQ_TOPIC", "orders.requested.dlq"),
		Consumer: consumer.Options{
			Group:                e.String("CONSUMER_GROUP", "orderflow-ingress"),
			InFlightPerPartition: e.Int("CONSUMER_IN_FLIGHT", 16),
			CommitInterval:       e.Duration("CONSUMER_COMMIT_INTERVAL", 200*time.Millisecond),
		},
		CancelWindow:      e.Duration("CANCEL_WINDOW", 0),
		KafkaCloseTimeout: e.Duration("KAFKA_CLOSE_TIMEOUT", 5*time.Second),
		PaymentsURL:       e.String("PAYMENTS_URL", "http://127.0.0.1:8099"),
		PaymentsAPIKey:    e.String("PAYMENTS_API_KEY", ""),
		PaymentsTimeout:   e.Duration("PAYMENTS_TIMEOUT", 10*time.Second),
		OpsAddr:           e.String("OPS_ADDR", ":9090"),
		ShutdownTimeout:   e.Duration("SHUTDOWN_TIMEOUT", 25*time.Second),
		LogLevel:          e.String("LOG_LEVEL", "info"),
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
		return database.MigrateURL(ctx, c.DatabaseURL, logger)
	case "dlq":
		return redrive(ctx, c, args[2:], logger, stdout)
	default:
		return fmt.Errorf("unknown command %q (want no argument, \"migrate\" or \"dlq redrive\")", cmd)
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
	defer tc.Close() // after the worker and the consumer

	reg := telemetry.NewRegistry()
	shutdownSeconds := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "orderflow_worker_shutdown_duration_seconds",
		Help: "How long the last drain took, from SIGTERM to the Kafka writers closing.",
	})
	reg.MustRegister(shutdownSeconds)

	events := activities.NewWriter(c.KafkaBrokers, c.EventsTopic)
	dlq := activities.NewWriter(c.KafkaBrokers, c.DLQTopic)
	w := worker.New(tc, c.Worker, worker.Activities{
		Orders:   activities.NewOrders(pool),
		Payments: activities.NewPayments(pool, provider.New(c.PaymentsURL, c.PaymentsAPIKey, c.PaymentsTimeout)),
		Events:   activities.NewEvents(events),
	})
	reader := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           c.KafkaBrokers,
		GroupID:           c.Consumer.Group,
		Topic:             c.RequestsTopic,
		StartOffset:       kafka.FirstOffset,
		MaxWait:           250 * time.Millisecond,
		HeartbeatInterval: 2 * time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		CommitInterval:    0, // commits are explicit and synchronous
		ErrorLogger:       kafka.LoggerFunc(func(msg string, args ...any) { logger.Warn(fmt.Sprintf(msg, args...), "component", "kafka-reader") }),
	})
	cons := consumer.New(c.Consumer, reader, dlq, intake.NewStarter(tc, c.Worker.TaskQueue, c.CancelWindow),
		consumer.NewStore(pool), logger, consumer.NewMetrics(reg))

	ready := &telemetry.Readiness{}
	ready.Add("postgres", pool.Ping)
	ready.Add("temporal", temporalclient.Check(tc))
	ready.Add("consumer", cons.Ready)

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
	// The consumer's context is its own, so the stop below can end it in order.
	consumerCtx, stopConsumer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopConsumer()
	consumerDone := make(chan error, 1)
	go func() { consumerDone <- cons.Run(consumerCtx) }()
	logger.Info("worker started", "task_queue", c.Worker.TaskQueue, "requests_topic", c.RequestsTopic,
		"group", c.Consumer.Group, "ops", ln.Addr().String())

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("draining", "budget", c.ShutdownTimeout.String())
	case err := <-opsErr:
		runErr = fmt.Errorf("ops server: %w", err)
	case err := <-consumerDone:
		runErr = fmt.Errorf("consumer stopped unexpectedly: %v", err)
		consumerDone <- nil // for the drain below, which waits on it
	}

	// Ordered stop under one deadline; the signal context is already cancelled.
	began := time.Now()
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	ready.Drain()
	stopConsumer() // stop taking events; partitions commit what they settled
	select {
	case <-consumerDone:
	case <-sctx.Done():
		logger.Error("consumer did not stop within the shutdown budget")
	}
	closeKafka(sctx, c.KafkaCloseTimeout, "reader", reader.Close, logger)
	w.Stop() // running activities get WORKER_STOP_TIMEOUT to finish, then go back to Temporal
	closeKafka(sctx, c.KafkaCloseTimeout, "events writer", events.Close, logger)
	closeKafka(sctx, c.KafkaCloseTimeout, "dead-letter writer", dlq.Close, logger)
	shutdownSeconds.Set(time.Since(began).Seconds())
	if err := ops.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Warn("ops server shutdown", "err", err)
	}
	logger.Info("stopped", "took", time.Since(began).String())
	return runErr
}

// closeKafka closes a kafka-go reader or writer, giving up after timeout (or the
// overall deadline): their Close is known to hang on some broker failures.
func closeKafka(ctx context.Context, timeout time.Duration, what string, close func() error, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := closeWithin(ctx, close); err != nil {
		logger.Error("kafka "+what+" close abandoned or failed", "err", err)
	}
}

func redrive(ctx context.Context, c cfg, args []string, logger *slog.Logger, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "redrive" {
		return errors.New("usage: worker dlq redrive [--event-id ID]...")
	}
	fs := flag.NewFlagSet("dlq redrive", flag.ContinueOnError)
	var ids stringList
	fs.Var(&ids, "event-id", "redrive only this eventId (repeatable); default: all")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	w := &kafka.Writer{Addr: kafka.TCP(c.KafkaBrokers...), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond}
	defer w.Close()
	sum, err := consumer.Redrive(ctx, c.KafkaBrokers, c.DLQTopic, ids, w, logger)
	fmt.Fprintf(stdout, "dead letters read: %d, redriven: %d, skipped: %d\n", sum.Read, sum.Redriven, sum.Skipped)
	return err
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

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
