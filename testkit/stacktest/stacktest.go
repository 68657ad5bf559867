// Package stacktest connects integration tests to the real local stack started by
// scripts/stack. Without the stack, tests skip, unless ORDERFLOW_REQUIRE_STACK=1
// (set by make test), in which case they fail.
package stacktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/segmentio/kafka-go"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"

	"github.com/orderflow/orderflow/contracts"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/patience"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/temporalclient"
	"github.com/orderflow/orderflow/testkit"
)

// Env returns the variables of the stack's env file, skipping the test when the
// stack is not running (failing it under ORDERFLOW_REQUIRE_STACK=1).
func Env(tb testing.TB) map[string]string {
	tb.Helper()
	env, err := testkit.Env()
	if err != nil {
		if os.Getenv("ORDERFLOW_REQUIRE_STACK") == "1" {
			tb.Fatalf("the local stack is required but its env file cannot be read (%v): run scripts/stack up", err)
		}
		tb.Skip("local stack not running (scripts/stack up); set ORDERFLOW_REQUIRE_STACK=1 to fail instead")
	}
	return env
}

// Pool returns a pool on the stack's database with the migrations applied.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	env := Env(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := database.Open(ctx, env["DATABASE_URL"], 10, nil)
	if err != nil {
		tb.Fatalf("open database: %v", err)
	}
	tb.Cleanup(pool.Close)
	if err := database.Migrate(ctx, pool, Logger(tb)); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	return pool
}

// Temporal returns a client of the stack's Temporal server, encrypting payloads
// with the stack's PAYLOAD_KEYS as the binaries do.
func Temporal(tb testing.TB) client.Client {
	tb.Helper()
	return TemporalWithKeys(tb, Env(tb)["PAYLOAD_KEYS"])
}

// Codec is the stack's payload encryption, as its Temporal clients use it.
func Codec(tb testing.TB) *payloadcodec.Codec {
	tb.Helper()
	ring, err := payloadcodec.ParseKeyring(Env(tb)["PAYLOAD_KEYS"])
	if err != nil {
		tb.Fatalf("payload keys: %v", err)
	}
	return payloadcodec.New(ring)
}

// TemporalWithKeys is Temporal with another payload keyring ("" for none: the
// client then reads history as it is stored) and the given interceptors.
func TemporalWithKeys(tb testing.TB, keys string, interceptors ...interceptor.ClientInterceptor) client.Client {
	tb.Helper()
	env := Env(tb)
	conn, err := temporalclient.LoadConnection(func(k string) (string, bool) { v := env[k]; return v, v != "" })
	if err != nil {
		tb.Fatal(err)
	}
	opts := conn
	opts.Logger = tlog.NewStructuredLogger(Logger(tb))
	if keys != "" {
		ring, err := payloadcodec.ParseKeyring(keys)
		if err != nil {
			tb.Fatalf("payload keys: %v", err)
		}
		opts = temporalclient.Settings{Connection: conn, Codec: payloadcodec.New(ring), Logger: Logger(tb)}.Options()
	}
	opts.Interceptors = interceptors
	// A busy server may answer the dial's health check late: dialled again, with
	// the patience of the worker and the API, for a minute in all.
	var c client.Client
	err = patience.Do(context.Background(), time.Minute, Logger(tb), "temporal frontend", timedOut, func() (err error) {
		c, err = client.Dial(opts)
		return err
	})
	if err != nil {
		tb.Fatalf("dial temporal: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Brokers returns the stack's Kafka bootstrap addresses.
func Brokers(tb testing.TB) []string {
	tb.Helper()
	return strings.Split(Env(tb)["KAFKA_BROKERS"], ",")
}

// KafkaPrincipal is the stack's SASL_SSL listener as one of its principals sees
// it (scripts/stack kafka_principals), with password, or the principal's own when
// password is "", and the settings a process would be given for it.
func KafkaPrincipal(tb testing.TB, name, password string) (kafkaclient.Cluster, map[string]string) {
	tb.Helper()
	env := Env(tb)
	if env["ORDERFLOW_KAFKA_SASL_BROKERS"] == "" {
		tb.Fatal("the stack has no SASL_SSL listener: run scripts/stack up again")
	}
	if password == "" {
		b, err := os.ReadFile(filepath.Join(env["ORDERFLOW_KAFKA_PRINCIPALS"], name+".password"))
		if err != nil {
			tb.Fatal(err)
		}
		password = strings.TrimSpace(string(b))
	}
	settings := map[string]string{"KAFKA_BROKERS": env["ORDERFLOW_KAFKA_SASL_BROKERS"], "KAFKA_TLS_CA_PATH": env["ORDERFLOW_STACK_CA"],
		"KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "KAFKA_SASL_USERNAME": name, "KAFKA_SASL_PASSWORD": password}
	c, err := testkit.Kafka(settings)
	if err != nil {
		tb.Fatal(err)
	}
	return c, settings
}

// Kafka is the stack's Kafka cluster with its security, as the processes reach it.
func Kafka(tb testing.TB) kafkaclient.Cluster {
	tb.Helper()
	c, err := testkit.Kafka(Env(tb))
	if err != nil {
		tb.Fatalf("kafka settings of the stack: %v", err)
	}
	return c
}

// Service runs scripts/stack ACTION SERVICE (stop, start, restart) for fault tests.
func Service(tb testing.TB, action, service string) {
	tb.Helper()
	out, err := exec.Command(Env(tb)["ORDERFLOW_STACK_SCRIPT"], action, service).CombinedOutput()
	if err != nil {
		tb.Fatalf("stack %s %s: %v\n%s", action, service, err, out)
	}
}

// TemporalCLI runs Temporal's CLI on the stack, as an operator would, and returns
// its output.
func TemporalCLI(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := exec.Command(Env(tb)["ORDERFLOW_STACK_SCRIPT"], append([]string{"temporal"}, args...)...).CombinedOutput()
	if err != nil {
		tb.Fatalf("temporal %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Name returns prefix plus a random suffix, to keep tests apart on a shared stack.
func Name(prefix string) string { return testkit.Name(prefix) }

// Logger returns a logger of warnings to stderr when ORDERFLOW_TEST_LOGS=1. (Not
// t.Log: SDK goroutines may still log after the test has returned.)
func Logger(tb testing.TB) *slog.Logger {
	var w io.Writer = io.Discard
	if os.Getenv("ORDERFLOW_TEST_LOGS") == "1" {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Topic creates a topic with a unique name and the given partitions.
func Topic(tb testing.TB, partitions int) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	topic, err := testkit.Topic(ctx, Env(tb), "test", partitions)
	if err != nil {
		tb.Fatal(err)
	}
	return topic
}

// RecreateTopic deletes topic and creates it again, empty, with partitions: as an
// operator who drops a topic to clear it does.
func RecreateTopic(tb testing.TB, topic string, partitions int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := Kafka(tb)
	cl := c.Client()
	defer kafkaclient.CloseClient(cl)
	resp, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil {
		tb.Fatalf("delete %s: %v", topic, err)
	}
	// The deletion completes in the background: creating the topic fails until then.
	for {
		err := kafkaclient.CreateTopic(ctx, c, topic, partitions, testkit.Replicas(Env(tb)))
		if err == nil {
			return
		}
		if !errors.Is(err, kafka.TopicAlreadyExists) || ctx.Err() != nil {
			tb.Fatalf("recreate %s: %v", topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// EndOffset returns the end offset of one partition of topic.
func EndOffset(tb testing.TB, topic string, partition int) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	end, err := kafkaclient.EndOffset(ctx, Kafka(tb), topic, partition)
	if err != nil {
		tb.Fatal(err)
	}
	return end
}

// Committed returns the group's committed offset of each of the topic's
// partitions 0 to partitions-1 (0 for none). A broker that answers with an
// error (a coordinator loading or moving, on a busy machine) is asked again for
// up to 30 s: read as no partitions, or as offsets of -1, an error looked like
// offsets all committed, or none.
func Committed(tb testing.TB, cl *kafka.Client, group, topic string, partitions int) map[int]int64 {
	tb.Helper()
	var asked []int
	for p := range partitions {
		asked = append(asked, p)
	}
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, err := committed(cl, group, topic, asked)
		if err == nil {
			return out
		}
		last = err
	}
	tb.Fatalf("committed offsets of %s on %s: %v", group, topic, last)
	return nil
}

func committed(cl *kafka.Client, group, topic string, partitions []int) (map[int]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: partitions}})
	if err == nil {
		err = resp.Error
	}
	if err != nil {
		return nil, err
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("partition %d: %w", p.Partition, p.Error)
		}
		out[p.Partition] = max(p.CommittedOffset, 0)
	}
	if len(out) != len(partitions) {
		return nil, fmt.Errorf("%d of %d partitions answered", len(out), len(partitions))
	}
	return out, nil
}

// Runs counts the runs of a workflow ID known to Temporal's visibility store.
func Runs(tb testing.TB, c client.Client, workflowID string) int {
	tb.Helper()
	return RunsOf(tb, c, fmt.Sprintf("WorkflowId = %q", workflowID))[workflowID]
}

// listPatience is how long a list is asked again while the server leaves it
// unanswered: the lanes beside a test can hold Temporal's dev server for over a
// minute, and a list changes nothing.
const listPatience = 3 * time.Minute

// RunsOf returns the number of runs of each workflow ID the visibility query
// matches (a task queue's, say): one paged list where a loop of Runs would ask
// once per workflow.
func RunsOf(tb testing.TB, c client.Client, query string) map[string]int {
	tb.Helper()
	deadline := time.Now().Add(listPatience)
	for {
		runs, err := listRuns(c, query)
		if err == nil {
			return runs
		}
		if !timedOut(err) || time.Now().After(deadline) {
			tb.Fatalf("list runs of %s: %v", query, err)
		}
	}
}

func listRuns(c client.Client, query string) (map[string]int, error) {
	runs := map[string]int{}
	var page []byte
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: page})
		cancel()
		if err != nil {
			return nil, err
		}
		for _, e := range resp.Executions {
			runs[e.GetExecution().GetWorkflowId()]++
		}
		if page = resp.NextPageToken; len(page) == 0 {
			return runs, nil
		}
	}
}

// timedOut is whether err is a call's deadline passing or the server being
// unavailable: what a busy machine causes, not what a wrong call does.
func timedOut(err error) bool {
	var late *serviceerror.DeadlineExceeded
	var unavailable *serviceerror.Unavailable
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &late) || errors.As(err, &unavailable)
}

// Metric returns the value of a counter or gauge (summed over its labels) in text
// exposition format, as served on /metrics.
func Metric(tb testing.TB, metricsText, name string) float64 {
	tb.Helper()
	var sum float64
	for _, line := range strings.Split(metricsText, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			tb.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// MetricsText renders a registry as /metrics would.
func MetricsText(reg *prometheus.Registry) string {
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// Contract is the published schemas of the Kafka topics: every event a test
// produces as valid, and every one the service emits, is checked against them.
func Contract(tb testing.TB) *contracts.Validator {
	tb.Helper()
	v, err := contracts.NewValidator()
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// Header returns the value of a Kafka message header, or "".
func Header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Messages reads the first want messages of partition 0 of topic, failing the test
// if they do not arrive within 20 s.
func Messages(tb testing.TB, topic string, want int) []kafka.Message {
	tb.Helper()
	r := Kafka(tb).NewReader(kafka.ReaderConfig{Topic: topic, Partition: 0, MaxWait: kafkaclient.FetchWait})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []kafka.Message
	for len(out) < want {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			tb.Fatalf("read %s (got %d of %d): %v", topic, len(out), want, err)
		}
		out = append(out, m)
	}
	return out
}

// TenantOrders is the read model limited to one tenant's unsettled orders: the
// stack's Postgres is shared by every test, and a test's reconciler must repair
// only its own orders (against its own sandbox).
type TenantOrders struct {
	*orderstore.Store
	Tenant string
}

// Unsettled returns the tenant's unsettled orders among the store's.
func (o TenantOrders) Unsettled(ctx context.Context, before time.Time, limit int) ([]orderstore.Unsettled, error) {
	all, err := o.Store.Unsettled(ctx, before, limit)
	var mine []orderstore.Unsettled
	for _, u := range all {
		if u.Tenant == o.Tenant {
			mine = append(mine, u)
		}
	}
	return mine, err
}
