package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/console"
	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform"
	"github.com/orderflow/orderflow/platform/codecauth"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/settings"
	"github.com/orderflow/orderflow/tenants/fleetrate"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/worker/retention"
)

// newDeps builds what the worker runs on the process's connections: the
// activities, the Kafka ingress and writers, the codec endpoint.
func newDeps(ctx context.Context, c settings.Worker, base *platform.Base, traces *tracing.Tracing, logger *slog.Logger) (worker.Deps, error) {
	reg := base.Registry
	reg.MustRegister(orderstore.New(base.Pool).OpenPaymentsCollector())
	events := kafkaclient.NewWriter(c.Kafka, c.EventsTopic)
	dlq := kafkaclient.NewWriter(c.Kafka, c.DLQTopic)
	cons, err := newConsumer(ctx, c, base, dlq, reg, traces, logger)
	if err != nil {
		return worker.Deps{}, err
	}
	base.Ready.Gate("postgres", "temporal") // a worker without them can do nothing
	base.Ready.Add("consumer", cons.Ready)
	var codec http.Handler
	if c.Run.CodecAddr != "" {
		if codec, err = codecauth.Guard(payloadcodec.Handler(base.Codec), c.Codec, logger); err != nil {
			return worker.Deps{}, err
		}
	}
	// One budget for every call this worker makes; reconcile passes take at most
	// ProviderRate of it.
	budget := provider.Budgeted(provider.Metered(traces.Transport(http.DefaultTransport), reg),
		provider.AccountPace(fleetrate.New(base.Pool), c.Payments), c.Fairness.Weight)
	acts := worker.NewActivities(base.Pool, provider.New(c.Payments, budget), events, reg, traces)
	paced := provider.New(c.Payments, provider.Paced(budget, reconcile.ProviderRate))
	dc, _ := payloadcodec.Converters(base.Codec)
	acts.Reconciler = worker.NewReconciler(reconcile.New(worker.NewEngine(base.Temporal, dc, c.TemporalNamespace, c.TaskQueue, c.Fairness, c.Policy), paced,
		orderstore.New(base.Pool), ledger.New(base.Pool), reconcile.Reopening{Store: reconcile.NewStore(base.Pool)}, reconcile.NewMetrics(reg), c.Reconcile))
	// Every worker tries; one at a time leads (an advisory lock), and a pass on
	// another worker waits for the next interval.
	writers := []worker.Closer{{Name: "events writer", Close: events.Close}, {Name: "dead-letter writer", Close: dlq.Close}}
	consoleHandler, redrives, err := newConsole(c, base, logger)
	if err != nil {
		return worker.Deps{}, err
	}
	if redrives != nil {
		writers = append(writers, worker.Closer{Name: "redrive writer", Close: redrives.Close})
	}
	rules := c.Retentions.Rules()
	go retention.NewPruner(base.Pool, rules, retention.Paced(), retention.NewMetrics(reg, rules), logger).
		Run(ctx, c.PruneInterval)
	return worker.Deps{
		Logger:     logger,
		Temporal:   base.Temporal,
		Activities: acts,
		Consumer:   cons,
		Writers:    writers,
		Registry:   reg,
		Ready:      base.Ready,
		Codec:      codec,
		Console:    consoleHandler,
	}, nil
}

// newConsole builds the operator console on the worker's stores and Kafka, and
// the writer its redrives use; none without CONSOLE_ADDR.
func newConsole(c settings.Worker, base *platform.Base, logger *slog.Logger) (http.Handler, *kafka.Writer, error) {
	if c.Run.ConsoleAddr == "" {
		return nil, nil, nil
	}
	w := kafkaclient.NewWriter(c.Kafka, "") // a redrive names each message's topic
	letters := console.KafkaLetters{Cluster: c.Kafka, Writer: w, Redrives: consumer.NewRedrives(base.Pool), Keys: base.Codec, Logger: logger,
		Options: consumer.RedriveOptions{DLQTopic: c.DLQTopic, RequestsTopic: c.RequestsTopic, Kinds: letterKinds(), Progress: 1000}}
	h, err := console.New(console.Stores{Orders: orderstore.New(base.Pool), Payments: ledger.New(base.Pool),
		Refunds: refundstore.New(base.Pool), Keys: idempotency.New(base.Pool, 0, 0), Findings: reconcile.NewStore(base.Pool),
		Letters: letters}, c.Console, logger)
	if err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("console: %w", err)
	}
	return h, w, nil
}
