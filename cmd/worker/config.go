package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/internal/platform/codecauth"
	"github.com/orderflow/orderflow/internal/platform/config"
	"github.com/orderflow/orderflow/internal/platform/database"
	"github.com/orderflow/orderflow/internal/platform/kafkaclient"
	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/worker"
)

type cfg struct {
	config.Common
	Run            worker.RunOptions
	Kafka          kafkaclient.Cluster
	EventsTopic    string
	RequestsTopic  string
	DLQTopic       string
	Consumer       consumer.Options
	Payments       provider.Config
	TenantCacheTTL time.Duration
	Codec          codecauth.Options
}

func loadConfig(getenv func(string) string) (cfg, error) {
	e := config.New(getenv)
	c := cfg{Common: e.Common()}
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
	c.EventsTopic = e.String("EVENTS_TOPIC", "orders.events")
	c.RequestsTopic = e.String("REQUESTS_TOPIC", "orders.requested")
	c.DLQTopic = e.String("DLQ_TOPIC", "orders.requested.dlq")
	c.Consumer = consumer.Options{
		Topic:          c.RequestsTopic,
		Group:          e.String("CONSUMER_GROUP", "orderflow-ingress"),
		InFlight:       e.Int("CONSUMER_IN_FLIGHT", 16),
		MaxUncommitted: e.Int("CONSUMER_MAX_UNCOMMITTED", 128),
		CommitInterval: e.Duration("CONSUMER_COMMIT_INTERVAL", 200*time.Millisecond),
	}
	c.Payments = e.Payments(provider.DefaultTimeout)
	c.TenantCacheTTL = e.Duration("TENANT_CACHE_TTL", 30*time.Second)
	c.Codec = codecauth.Options{
		Tokens: e.List("CODEC_TOKENS", ""), Issuer: e.String("CODEC_JWT_ISSUER", ""), Audience: e.String("CODEC_JWT_AUDIENCE", ""),
		JWKS: e.String("CODEC_JWKS", ""), Namespace: c.TemporalNamespace, Origin: e.String("CODEC_CORS_ORIGIN", ""),
	}
	if err := e.Err(); err != nil {
		return c, err
	}
	if c.Run.StopTimeout >= c.ShutdownTimeout {
		return c, fmt.Errorf("WORKER_STOP_TIMEOUT (%s) must be shorter than SHUTDOWN_TIMEOUT (%s)", c.Run.StopTimeout, c.ShutdownTimeout)
	}
	return c, nil
}

// command runs a subcommand: migrate, or dlq redrive.
func command(ctx context.Context, c cfg, args []string, logger *slog.Logger, stdout io.Writer) error {
	switch args[0] {
	case "migrate":
		return database.MigrateURL(ctx, c.DatabaseURL, logger)
	case "dlq":
		return redrive(ctx, c, args[1:], logger, stdout)
	}
	return fmt.Errorf("unknown command %q (want no argument, \"migrate\" or \"dlq redrive\")", args[0])
}

// redrive is `worker dlq redrive [--event-id ID]...`.
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
	pool, err := database.Open(ctx, c.DatabaseURL, 2, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	w := kafkaclient.NewWriter(c.Kafka, "")
	defer w.Close()
	sum, err := consumer.Redrive(ctx, c.Kafka, consumer.RedriveOptions{
		DLQTopic: c.DLQTopic, RequestsTopic: c.RequestsTopic, EventIDs: ids, Progress: 1000,
	}, w, consumer.NewRedrives(pool), payloadcodec.New(c.PayloadKeys), logger)
	fmt.Fprintf(stdout, "%s -> %s: %s\n", c.DLQTopic, c.RequestsTopic, sum)
	return err
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
