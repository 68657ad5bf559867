package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/orderflow/orderflow/cmd/internal/settings"
	"github.com/orderflow/orderflow/internal/fleetrate"
	"github.com/orderflow/orderflow/internal/ledger"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/platform"
	"github.com/orderflow/orderflow/internal/platform/codecauth"
	"github.com/orderflow/orderflow/internal/platform/kafkaclient"
	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
	"github.com/orderflow/orderflow/internal/platform/tracing"
	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/internal/reconcile"
	"github.com/orderflow/orderflow/internal/retention"
	"github.com/orderflow/orderflow/worker"
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
		orderstore.New(base.Pool), ledger.New(base.Pool), reconcile.NewStore(base.Pool), reconcile.NewMetrics(reg), c.Reconcile))
	// Every worker tries; one at a time leads (an advisory lock), and a pass on
	// another worker waits for the next interval.
	rules := c.Retentions.Rules()
	go retention.NewPruner(base.Pool, rules, retention.Paced(), retention.NewMetrics(reg, rules), logger).
		Run(ctx, c.PruneInterval)
	return worker.Deps{
		Logger:     logger,
		Temporal:   base.Temporal,
		Activities: acts,
		Consumer:   cons,
		Writers:    []worker.Closer{{Name: "events writer", Close: events.Close}, {Name: "dead-letter writer", Close: dlq.Close}},
		Registry:   reg,
		Ready:      base.Ready,
		Codec:      codec,
	}, nil
}
