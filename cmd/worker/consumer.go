package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/ingress/refunds"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/settings"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/fleetrate"
	"github.com/orderflow/orderflow/tenants/quota"
)

// newConsumer builds the Kafka ingress: the group on the requests topic, a reader
// per assigned partition, and the intake service that deduplicates events.
func newConsumer(ctx context.Context, c settings.Worker, base *platform.Base, dlq *kafka.Writer, reg *prometheus.Registry, traces *tracing.Tracing, logger *slog.Logger) (*consumer.Consumer, error) {
	group, err := kafkaclient.NewConsumerGroup(c.Kafka, c.Consumer.Group, c.RequestsTopic, logger)
	if err != nil {
		return nil, err
	}
	readers := func(p int) consumer.PartitionReader {
		return kafkaclient.NewPartitionReader(c.Kafka, c.RequestsTopic, p)
	}
	budget, err := quota.NewLimiter("events", c.TenantLimit, fleetrate.New(base.Pool))
	if err != nil {
		return nil, err
	}
	go budget.Refresh(ctx, quota.NewStore(base.Pool), c.TenantLimitsRefresh, logger)
	opts := c.Consumer
	opts.Budget = budget
	setup := intake.Setup{Pool: base.Pool, Temporal: base.Temporal, TaskQueue: c.TaskQueue, Fairness: c.Fairness,
		Logger: logger, Codec: base.Codec, Eager: c.Run.Eager}
	in := intake.NewConsumer(setup, c.Consumer.Group, orders.ForEvents(setup, c.Policy),
		refunds.New(orderstore.New(base.Pool), refundstore.New(base.Pool), setup.Starter()))
	return consumer.New(opts, group, readers, dlq, base.Codec, in, apikeys.NewTenants(base.Pool, c.TenantCacheTTL), logger, consumer.NewMetrics(reg), traces), nil
}
