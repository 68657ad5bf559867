// Package workertest runs the order pipeline (the real worker and the payment
// sandbox) on the local stack for the stack tests of the packages above it.
package workertest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace/noop"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/testkit"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/workflows"
)

// Orders is the order pipeline on the real stack for one test: its own task queue
// and events topic, and the payment sandbox inside the test process so the test can
// count charges and inject faults.
type Orders struct {
	Pool     *pgxpool.Pool
	Temporal client.Client
	Codec    *payloadcodec.Codec // Temporal's payload encryption
	Sim      *sandbox.Server
	SimURL   string
	Queue    string
	Topic    string
	Brokers  []string
	Kafka    kafkaclient.Cluster // the brokers with the stack's security
	Env      map[string]string
	// Tracing traces the in-process worker's activities (not recorded by default).
	Tracing *tracing.Tracing
}

// NewOrders prepares the pipeline; no worker runs yet.
func NewOrders(tb testing.TB) *Orders {
	tb.Helper()
	h := &Orders{
		Pool:     stacktest.Pool(tb),
		Temporal: stacktest.Temporal(tb),
		Codec:    stacktest.Codec(tb),
		Sim:      sandbox.New(slog.New(slog.NewTextHandler(io.Discard, nil)), sandbox.Options{SearchDelay: 200 * time.Millisecond}),
		Queue:    stacktest.Name("orders"),
		Topic:    stacktest.Topic(tb, 1),
		Brokers:  stacktest.Brokers(tb),
		Kafka:    stacktest.Kafka(tb),
		Env:      stacktest.Env(tb),
		Tracing:  tracing.With(noop.NewTracerProvider()),
	}
	srv := httptest.NewServer(h.Sim.Handler())
	tb.Cleanup(srv.Close)
	tb.Cleanup(h.Sim.Close)
	h.SimURL = srv.URL
	return h
}

// StartWorker runs the real worker inside the test process until cleanup.
func (h *Orders) StartWorker(tb testing.TB) {
	tb.Helper()
	writer := kafkaclient.NewWriter(h.Kafka, h.Topic)
	acts := worker.NewActivities(h.Pool, provider.New(provider.Config{URL: h.SimURL, Timeout: 2 * time.Second}, h.Tracing.Transport(nil)), writer, prometheus.NewRegistry(), h.Tracing)
	// Orders placed through an API process carry their payment method sealed
	// under the customer's key: this worker opens it as cmd/worker does.
	keys, err := custkeys.Open(context.Background(), h.Pool, h.Codec)
	if err != nil {
		tb.Fatal(err)
	}
	activities.OpenPaymentMethods(acts.Payments, keys)
	w := worker.New(h.Temporal, worker.Options{TaskQueue: h.Queue, MaxConcurrentActivities: 50, MaxConcurrentWorkflowTasks: 20, StopTimeout: 5 * time.Second},
		acts)
	if err := w.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		w.Stop()
		_ = writer.Close()
	})
}

// LookupDelay is the pipeline's wait before looking up an unknown payment: above
// the sandbox's search delay, far below production's minute.
const LookupDelay = time.Second

// WorkerEnv is the environment of a cmd/worker process serving this pipeline.
func (h *Orders) WorkerEnv() map[string]string {
	return testkit.Connections(h.Env, map[string]string{
		"TASK_QUEUE":           h.Queue,
		"EVENTS_TOPIC":         h.Topic,
		"PAYMENTS_URL":         h.SimURL,
		"PAYMENTS_TIMEOUT":     "10s",
		"OPS_ADDR":             "127.0.0.1:0",
		"WORKER_STOP_TIMEOUT":  "5s",
		"PAYMENT_LOOKUP_DELAY": LookupDelay.String(),
	})
}

// StartWorkerProcess runs cmd/worker as a child process, so it can be killed.
func (h *Orders) StartWorkerProcess(tb testing.TB) *stacktest.Proc {
	tb.Helper()
	return stacktest.Start(tb, stacktest.Binary(tb, "cmd/worker"), h.WorkerEnv())
}

// setup is what this pipeline's intakes start workflows with.
func (h *Orders) setup() intake.Setup {
	return intake.Setup{Pool: h.Pool, Temporal: h.Temporal, TaskQueue: h.Queue,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Codec: h.Codec}
}

// policy is how this pipeline's orders treat time.
func policy(cancelWindow time.Duration) workflows.Policy {
	return workflows.Policy{CancelWindow: cancelWindow, LookupDelay: LookupDelay}
}

// APIIntake is the API process's order service on this pipeline's task queue.
func (h *Orders) APIIntake(cancelWindow time.Duration) *orders.Service {
	api := h.setup()
	api.Waited = true // as the API process starts them
	return orders.NewAPI(api, idempotency.New(h.Pool, 24*time.Hour, idempotency.DefaultReplayBytes), policy(cancelWindow), nil)
}

// OrderKind is the order kind as the Kafka ingress starts it on this
// pipeline's task queue.
func (h *Orders) OrderKind() *orders.Kind { return orders.ForEvents(h.setup(), policy(0)) }

// ConsumerIntake is the Kafka ingress's intake on this pipeline's task queue,
// deduplicating the events of group: orders, and the more kinds given.
func (h *Orders) ConsumerIntake(group string, more ...ingress.Kind) *intake.Events {
	return intake.NewConsumer(h.setup(), group, append([]ingress.Kind{h.OrderKind()}, more...)...)
}

// Starter starts workflows of any kind on this pipeline's task queue.
func (h *Orders) Starter() intake.Starter { return h.setup().Starter() }
