package orderflow

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/console"
	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/ingress/refunds"
	"github.com/orderflow/orderflow/operator"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform"
	"github.com/orderflow/orderflow/platform/backlog"
	"github.com/orderflow/orderflow/platform/cli"
	"github.com/orderflow/orderflow/platform/codecauth"
	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/records"
	"github.com/orderflow/orderflow/platform/telemetry"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/settings"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/fleetrate"
	"github.com/orderflow/orderflow/tenants/quota"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/worker/retention"
)

// Worker is the worker binary, running orders, refunds and kinds: serve (its
// default command) and migrate, then the operator's commands.
func Worker(getenv func(string) string, stdout, stderr io.Writer, kinds ...Kind) cli.App {
	kinds = append([]Kind{erasures{}}, kinds...)
	commands := []cli.Command{
		{Summary: "run until SIGTERM, then drain", Run: func(ctx context.Context, _ *flag.FlagSet) error {
			return serveWorker(ctx, getenv, stdout, kinds)
		}},
		platform.MigrateCommand(getenv, stdout),
	}
	commands = append(commands, operator.WorkerCommandsWith(getenv, stdout, stderr, extra(kinds, getenv))...)
	return cli.App{Name: "worker", Summary: "orderflow's Temporal worker and Kafka ingress", Stdout: stdout, Stderr: stderr, Commands: commands}
}

// extra is what the operator's commands know of kinds: their names and
// envelopes (a kind's Ingress on a platform without connections must build), and
// their workflows.
func extra(kinds []Kind, getenv func(string) string) operator.Extra {
	x := operator.Extra{Workflows: func(r sdkworker.WorkflowRegistry) {
		for _, k := range kinds {
			k.Workflows(r)
		}
	}}
	for _, k := range kinds {
		if ik, err := k.Ingress(Platform{Getenv: getenv}); err == nil {
			x.Kinds = append(x.Kinds, ik)
		}
	}
	return x
}

// serveWorker runs the worker.
func serveWorker(ctx context.Context, getenv func(string) string, stdout io.Writer, kinds []Kind) error {
	c, err := settings.LoadWorker(config.New(getenv))
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := telemetry.NewLogger(stdout, c.LogLevel)
	traces, err := tracing.FromEnv(ctx, "orderflow-worker", getenv)
	if err != nil {
		return err
	}
	defer traces.Flush(logger) // last: spans of the stop are sent too
	base, err := platform.Open(ctx, c.Common, traces, logger)
	if err != nil {
		return err
	}
	defer base.Close() // after worker.Run's ordered stop
	deps, err := newDeps(ctx, c, base, traces, logger, kinds, getenv)
	if err != nil {
		return err
	}
	return worker.Run(ctx, deps, c.Run)
}

// platformOf is what kinds are built on in the worker.
func platformOf(ctx context.Context, c settings.Worker, base *platform.Base, logger *slog.Logger, getenv func(string) string) (Platform, intake.Setup, error) {
	customers, err := custkeys.Open(ctx, base.Pool, base.Codec)
	if err != nil {
		return Platform{}, intake.Setup{}, err
	}
	setup := intake.Setup{Pool: base.Pool, Temporal: base.Temporal, TaskQueue: c.TaskQueue, Fairness: c.Fairness,
		Logger: logger, Codec: base.Codec, Eager: c.Run.Eager, Customers: customers}
	return Platform{Pool: base.Pool, Temporal: base.Temporal, Starter: setup.Starter(), Records: records.NewStore(base.Pool),
		Logger: logger, Getenv: getenv, Customers: customers}, setup, nil
}

// newDeps builds what the worker runs on the process's connections: the
// activities (orderflow's and the kinds'), the Kafka ingress and writers, the
// codec endpoint, the console.
func newDeps(ctx context.Context, c settings.Worker, base *platform.Base, traces *tracing.Tracing, logger *slog.Logger,
	kinds []Kind, getenv func(string) string) (worker.Deps, error) {
	reg := base.Registry
	reg.MustRegister(orderstore.New(base.Pool).OpenPaymentsCollector())
	p, setup, err := platformOf(ctx, c, base, logger, getenv)
	if err != nil {
		return worker.Deps{}, err
	}
	events := kafkaclient.NewWriter(c.Kafka, c.EventsTopic)
	dlq := kafkaclient.NewWriter(c.Kafka, c.DLQTopic)
	cons, err := newConsumer(ctx, c, base, setup, p, kinds, dlq, reg, traces, logger)
	if err != nil {
		return worker.Deps{}, err
	}
	base.Ready.Gate("postgres", "temporal") // a worker without them can do nothing
	base.Ready.Add("consumer", cons.Ready)
	var codec http.Handler
	if c.Run.CodecAddr != "" {
		if codec, err = codecauth.Guard(payloadcodec.Handler(custkeys.NewRevealing(base.Codec, p.Customers)), c.Codec, logger); err != nil {
			return worker.Deps{}, err
		}
	}
	acts, err := activitiesOf(c, base, traces, events, p, kinds)
	if err != nil {
		return worker.Deps{}, err
	}
	writers := []worker.Closer{{Name: "events writer", Close: events.Close}, {Name: "dead-letter writer", Close: dlq.Close}}
	consoleHandler, redrives, err := newConsole(c, base, p.Customers, logger, extra(kinds, getenv).Kinds)
	if err != nil {
		return worker.Deps{}, err
	}
	if redrives != nil {
		writers = append(writers, worker.Closer{Name: "redrive writer", Close: redrives.Close})
	}
	rules := c.Retentions.Rules()
	go retention.NewPruner(base.Pool, rules, retention.Paced(), retention.NewMetrics(reg, rules), logger).
		Run(ctx, c.PruneInterval)
	return worker.Deps{Logger: logger, Temporal: base.Temporal, Activities: acts, Consumer: cons, Writers: writers,
		Registry: reg, Ready: base.Ready, Codec: codec, Console: consoleHandler}, nil
}

// activitiesOf are orderflow's activities, its reconciler's, and the kinds'.
func activitiesOf(c settings.Worker, base *platform.Base, traces *tracing.Tracing, events *kafka.Writer, p Platform, kinds []Kind) (worker.Activities, error) {
	reg := base.Registry
	// One budget for every call this worker makes; reconcile passes take at most
	// ProviderRate of it.
	budget := provider.Budgeted(provider.Metered(traces.Transport(http.DefaultTransport), reg),
		provider.AccountPace(fleetrate.New(base.Pool), c.Payments), c.Fairness.Weight)
	acts := worker.NewActivities(base.Pool, provider.New(c.Payments, budget), events, reg, traces)
	activities.OpenPaymentMethods(acts.Payments, p.Customers)
	paced := provider.New(c.Payments, provider.Paced(budget, reconcile.ProviderRate))
	dc, _ := payloadcodec.Converters(base.Codec)
	// Every worker tries; one at a time leads (an advisory lock), and a pass on
	// another worker waits for the next interval.
	acts.Reconciler = worker.NewReconciler(reconcile.New(worker.NewEngine(base.Temporal, dc, c.TemporalNamespace, c.TaskQueue, c.Fairness, c.Policy), paced,
		orderstore.New(base.Pool), ledger.New(base.Pool), reconcile.Reopening{Store: reconcile.NewStore(base.Pool)}, reconcile.NewMetrics(reg), c.Reconcile))
	for _, k := range kinds {
		// Built now, so that a kind that cannot build its activities stops the
		// worker at start, not on its first task.
		built, err := k.Activities(p)
		if err != nil {
			return worker.Activities{}, fmt.Errorf("kind at /v1/%s: %w", k.Route(), err)
		}
		acts.Kinds = append(acts.Kinds, func(r sdkworker.Registry) {
			k.Workflows(r)
			for _, a := range built {
				r.RegisterActivity(a)
			}
		})
	}
	return acts, nil
}

// newConsumer builds the Kafka ingress: the group on the requests topic, a reader
// per assigned partition, and the intake service that deduplicates events of
// orders, refund requests and the kinds.
func newConsumer(ctx context.Context, c settings.Worker, base *platform.Base, setup intake.Setup, p Platform, kinds []Kind,
	dlq *kafka.Writer, reg *prometheus.Registry, traces *tracing.Tracing, logger *slog.Logger) (*consumer.Consumer, error) {
	group, err := kafkaclient.NewConsumerGroup(c.Kafka, c.Consumer.Group, c.RequestsTopic, logger)
	if err != nil {
		return nil, err
	}
	readers := func(n int) consumer.PartitionReader {
		return kafkaclient.NewPartitionReader(c.Kafka, c.RequestsTopic, n)
	}
	budget, err := quota.NewLimiter("events", c.TenantLimit, fleetrate.New(base.Pool))
	if err != nil {
		return nil, err
	}
	go budget.Refresh(ctx, quota.NewStore(base.Pool), c.TenantLimitsRefresh, logger)
	opts := c.Consumer
	opts.Budget = budget
	fleet, err := startBacklog(ctx, c.Common, c.Fairness, base, logger)
	if err != nil {
		return nil, err
	}
	if fleet != nil {
		opts.Budget = behindBacklog{fleet, budget}
	}
	opts.Customers = consumer.NewCustomers(base.Pool, p.Customers)
	all := []ingress.Kind{orders.ForEvents(setup, c.Policy), refunds.New(orderstore.New(base.Pool), refundstore.New(base.Pool), setup.Starter())}
	for _, k := range kinds {
		ik, err := k.Ingress(p)
		if err != nil {
			return nil, fmt.Errorf("kind at /v1/%s: %w", k.Route(), err)
		}
		all = append(all, ik)
	}
	in := intake.NewConsumer(setup, c.Consumer.Group, all...)
	return consumer.New(opts, group, readers, dlq, base.Codec, in, apikeys.NewTenants(base.Pool, c.TenantCacheTTL), logger, consumer.NewMetrics(reg), traces), nil
}

// behindBacklog holds an event until the fleet's backlog takes it (its tenant's
// share, or three quarters of the bound), then to its tenant's budget: above
// the fleet's bound the events wait in the topic.
type behindBacklog struct {
	fleet  *backlog.Gauge
	budget consumer.Budget
}

func (b behindBacklog) Wait(ctx context.Context, tenant string) error {
	if err := b.fleet.Wait(ctx, tenant); err != nil {
		return err
	}
	return b.budget.Wait(ctx, tenant)
}

// newConsole builds the operator console on the worker's stores and Kafka, and
// the writer its redrives use; none without CONSOLE_ADDR.
func newConsole(c settings.Worker, base *platform.Base, customers *custkeys.Store, logger *slog.Logger, kinds []ingress.Kind) (http.Handler, *kafka.Writer, error) {
	if c.Run.ConsoleAddr == "" {
		return nil, nil, nil
	}
	w := kafkaclient.NewWriter(c.Kafka, "") // a redrive names each message's topic
	letters := console.KafkaLetters{Cluster: c.Kafka, Writer: w, Redrives: consumer.NewRedrives(base.Pool), Keys: base.Codec, Customers: customers, Logger: logger,
		Options: consumer.RedriveOptions{DLQTopic: c.DLQTopic, RequestsTopic: c.RequestsTopic, Kinds: operator.LetterKinds(kinds...), Progress: 1000}}
	h, err := console.New(console.Stores{Orders: orderstore.New(base.Pool), Payments: ledger.New(base.Pool),
		Refunds: refundstore.New(base.Pool), Keys: idempotency.New(base.Pool, 0, 0), Findings: reconcile.NewStore(base.Pool),
		Letters: letters, Customers: customers}, c.Console, logger)
	if err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("console: %w", err)
	}
	return h, w, nil
}
