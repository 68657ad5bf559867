package settings

import (
	"fmt"
	"time"

	"github.com/orderflow/orderflow/console"
	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/codecauth"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/worker/retention"
	"github.com/orderflow/orderflow/workflows"
)

// Worker is the worker's configuration.
type Worker struct {
	config.Common
	Tenants
	Policy         workflows.Policy
	Run            worker.RunOptions
	Kafka          kafkaclient.Cluster
	EventsTopic    string
	RequestsTopic  string
	DLQTopic       string
	Consumer       consumer.Options
	Payments       provider.Config
	TenantCacheTTL time.Duration
	Codec          codecauth.Options
	// Console is the operator console's, served on Run.ConsoleAddr.
	Console   console.Options
	Reconcile reconcile.Options
	// Retentions are how long each table keeps its rows; the fleet's leader
	// prunes every PruneInterval.
	Retentions    retention.Retentions
	PruneInterval time.Duration
}

// LoadWorker reads the worker's settings, reporting every bad one at once.
func LoadWorker(e *config.Env) (Worker, error) {
	c := Worker{Common: e.Common(), Tenants: readTenants(e), Policy: orders.PolicyFromEnv(e)}
	c.Run = worker.RunOptions{
		Options: worker.Options{
			TaskQueue:                  c.TaskQueue,
			MaxConcurrentActivities:    e.Int("MAX_CONCURRENT_ACTIVITIES", 100),
			MaxConcurrentWorkflowTasks: e.Int("MAX_CONCURRENT_WORKFLOW_TASKS", 50),
			StopTimeout:                e.Duration("WORKER_STOP_TIMEOUT", 15*time.Second),
			Eager:                      e.Bool("EAGER_DISPATCH", false),
		},
		OpsAddr:           e.String("OPS_ADDR", ":9090"),
		CodecAddr:         e.String("CODEC_ADDR", ""),
		ConsoleAddr:       e.String("CONSOLE_ADDR", ""),
		ShutdownTimeout:   c.ShutdownTimeout,
		KafkaCloseTimeout: e.Duration("KAFKA_CLOSE_TIMEOUT", 5*time.Second),
	}
	c.Kafka = e.Kafka()
	c.EventsTopic, c.RequestsTopic, c.DLQTopic = Topics(e)
	c.Consumer = consumer.Options{
		Topic:          c.RequestsTopic,
		Group:          e.String("CONSUMER_GROUP", "orderflow-ingress"),
		InFlight:       e.Int("CONSUMER_IN_FLIGHT", 16),
		MaxUncommitted: e.Int("CONSUMER_MAX_UNCOMMITTED", 128),
		CommitInterval: e.Duration("CONSUMER_COMMIT_INTERVAL", 200*time.Millisecond),
	}
	c.Payments = payments(e, provider.DefaultTimeout)
	c.TenantCacheTTL = e.Duration("TENANT_CACHE_TTL", 30*time.Second)
	interval, refund := e.Reconcile()
	c.Reconcile = reconcile.Options{Grace: interval, Overlap: 5 * time.Minute, FirstLookback: time.Hour, RefundOrphans: refund}
	c.Codec = codecauth.Options{
		Tokens: e.List("CODEC_TOKENS", ""), Issuer: e.String("CODEC_JWT_ISSUER", ""), Audience: e.String("CODEC_JWT_AUDIENCE", ""),
		JWKS: e.String("CODEC_JWKS", ""), Namespace: c.TemporalNamespace, Origin: e.String("CODEC_CORS_ORIGIN", ""),
	}
	c.Console = console.Options{Tokens: e.List("CONSOLE_TOKENS", ""), TemporalUI: e.String("TEMPORAL_UI_URL", ""), Namespace: c.TemporalNamespace}
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
	if c.Run.ConsoleAddr != "" && len(c.Console.Tokens) == 0 {
		return c, fmt.Errorf("CONSOLE_ADDR (%s) needs CONSOLE_TOKENS: the console shows every tenant's orders", c.Run.ConsoleAddr)
	}
	if c.Run.StopTimeout >= c.ShutdownTimeout {
		return c, fmt.Errorf("WORKER_STOP_TIMEOUT (%s) must be shorter than SHUTDOWN_TIMEOUT (%s)", c.Run.StopTimeout, c.ShutdownTimeout)
	}
	return c, nil
}

// Topics are the events, requests and dead-letter topics.
func Topics(e *config.Env) (events, requests, dlq string) {
	return e.String("EVENTS_TOPIC", "orders.events"), e.String("REQUESTS_TOPIC", "orders.requested"),
		e.String("DLQ_TOPIC", "orders.requested.dlq")
}
