package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/internal/platform/codecauth"
	"github.com/orderflow/orderflow/internal/platform/config"
	"github.com/orderflow/orderflow/internal/platform/database"
	"github.com/orderflow/orderflow/internal/platform/kafkaclient"
	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
	"github.com/orderflow/orderflow/internal/platform/telemetry"
	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/internal/reconcile"
	"github.com/orderflow/orderflow/internal/retention"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/workflows"
)

type cfg struct {
	config.Common
	Policy        workflows.Policy
	Run           worker.RunOptions
	Kafka         kafkaclient.Cluster
	EventsTopic   string
	RequestsTopic string
	DLQTopic      string
	Consumer      consumer.Options
	Payments      provider.Config
	// PaymentsRate is this worker's share of the provider account's rate limit,
	// in requests a second, shared fairly between tenants.
	PaymentsRate   int
	TenantCacheTTL time.Duration
	Codec          codecauth.Options
	Reconcile      reconcile.Options
	// Retentions are how long each table keeps its rows; the fleet's leader
	// prunes every PruneInterval.
	Retentions    retention.Retentions
	PruneInterval time.Duration
}

func loadConfig(getenv func(string) string) (cfg, error) {
	e := config.New(getenv)
	c := cfg{Common: e.Common(), Policy: intake.PolicyFromEnv(e)}
	c.Run = worker.RunOptions{
		Options: worker.Options{
			TaskQueue:                  c.TaskQueue,
			MaxConcurrentActivities:    e.Int("MAX_CONCURRENT_ACTIVITIES", 100),
			MaxConcurrentWorkflowTasks: e.Int("MAX_CONCURRENT_WORKFLOW_TASKS", 50),
			StopTimeout:                e.Duration("WORKER_STOP_TIMEOUT", 15*time.Second),
		},
		OpsAddr:           e.String("OPS_ADDR", ":9090"),
		CodecAddr:         e.String("CODEC_ADDR", ""),
		ShutdownTimeout:   c.ShutdownTimeout,
		KafkaCloseTimeout: e.Duration("KAFKA_CLOSE_TIMEOUT", 5*time.Second),
	}
	c.Kafka = e.Kafka()
	c.EventsTopic, c.RequestsTopic, c.DLQTopic = topics(e)
	c.Consumer = consumer.Options{
		Topic:          c.RequestsTopic,
		Group:          e.String("CONSUMER_GROUP", "orderflow-ingress"),
		InFlight:       e.Int("CONSUMER_IN_FLIGHT", 16),
		MaxUncommitted: e.Int("CONSUMER_MAX_UNCOMMITTED", 128),
		CommitInterval: e.Duration("CONSUMER_COMMIT_INTERVAL", 200*time.Millisecond),
	}
	c.Payments = e.Payments(provider.DefaultTimeout)
	c.PaymentsRate = e.Count("PAYMENTS_RATE", 90)
	c.TenantCacheTTL = e.Duration("TENANT_CACHE_TTL", 30*time.Second)
	interval, refund := e.Reconcile()
	c.Reconcile = reconcile.Options{Grace: interval, Overlap: 5 * time.Minute, FirstLookback: time.Hour, RefundOrphans: refund}
	c.Codec = codecauth.Options{
		Tokens: e.List("CODEC_TOKENS", ""), Issuer: e.String("CODEC_JWT_ISSUER", ""), Audience: e.String("CODEC_JWT_AUDIENCE", ""),
		JWKS: e.String("CODEC_JWKS", ""), Namespace: c.TemporalNamespace, Origin: e.String("CODEC_CORS_ORIGIN", ""),
	}
	d := retention.Defaults
	c.Retentions = retention.Retentions{
		Events: e.Duration("EVENTS_RETENTION", d.Events), Webhooks: e.Duration("WEBHOOK_EVENTS_RETENTION", d.Webhooks),
		Redrives: e.Duration("REDRIVES_RETENTION", d.Redrives), Findings: e.Duration("FINDINGS_RETENTION", d.Findings),
		Orders: e.Duration("ORDERS_RETENTION", 0),
	}
	c.PruneInterval = e.Duration("PRUNE_INTERVAL", time.Minute)
	e.Invalid(c.Retentions.Validate())
	if err := e.Err(); err != nil {
		return c, err
	}
	if c.Run.StopTimeout >= c.ShutdownTimeout {
		return c, fmt.Errorf("WORKER_STOP_TIMEOUT (%s) must be shorter than SHUTDOWN_TIMEOUT (%s)", c.Run.StopTimeout, c.ShutdownTimeout)
	}
	return c, nil
}

// command runs a subcommand: migrate, or dlq redrive.
// redrive is `worker dlq redrive [--event-id ID]...`.
func redrive(ctx context.Context, getenv func(string) string, ids []string, stdout io.Writer) error {
	e := config.New(getenv)
	url, kafka, keys := e.Required("DATABASE_URL"), e.Kafka(), e.Required("PAYLOAD_KEYS")
	_, requests, dlq := topics(e)
	logger := telemetry.NewLogger(stdout, e.String("LOG_LEVEL", "info"))
	if err := e.Err(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	ring, err := payloadcodec.ParseKeyring(keys)
	if err != nil {
		return fmt.Errorf("configuration: PAYLOAD_KEYS: %w", err)
	}
	pool, err := database.Open(ctx, url, 2, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	w := kafkaclient.NewWriter(kafka, "")
	defer w.Close()
	sum, err := consumer.Redrive(ctx, kafka, consumer.RedriveOptions{
		DLQTopic: dlq, RequestsTopic: requests, EventIDs: ids, Progress: 1000,
	}, w, consumer.NewRedrives(pool), payloadcodec.New(ring), logger)
	fmt.Fprintf(stdout, "%s -> %s: %s\n", dlq, requests, sum)
	return err
}

// topics are the events, requests and dead-letter topics.
func topics(e *config.Env) (events, requests, dlq string) {
	return e.String("EVENTS_TOPIC", "orders.events"), e.String("REQUESTS_TOPIC", "orders.requested"),
		e.String("DLQ_TOPIC", "orders.requested.dlq")
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
