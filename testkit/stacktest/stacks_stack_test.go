//go:build stack

package stacktest_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

func TestStackPostgresMigrations(t *testing.T) {
	pool := stacktest.Pool(t) // applies the migrations
	ctx := context.Background()
	// A second run finds nothing to do and must not fail.
	if err := database.Migrate(ctx, pool, stacktest.Logger(t)); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	var n int
	err := pool.QueryRow(ctx, `
		SELECT count(*) FROM information_schema.tables
		WHERE table_schema = 'public'
		  AND table_name IN ('orders', 'idempotency_keys', 'processed_events', 'payments', 'api_keys')`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("tables found = %d, want 5", n)
	}
	var version int64
	if err := pool.QueryRow(ctx, `SELECT max(version_id) FROM goose_db_version WHERE is_applied`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 1 {
		t.Fatalf("schema version = %d", version)
	}
	var server string
	if err := pool.QueryRow(ctx, `SHOW server_version`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	if v, _ := strconv.Atoi(server[:2]); v != 15 {
		t.Fatalf("server version %s, want PostgreSQL 15", server)
	}
}

func greet(ctx workflow.Context, name string) (string, error) {
	var out string
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	err := workflow.ExecuteActivity(ctx, shout, name).Get(ctx, &out)
	return out, err
}

func shout(_ context.Context, name string) (string, error) { return "hello, " + name + "!", nil }

func TestStackTemporalWorkflow(t *testing.T) {
	c := stacktest.Temporal(t)
	queue := stacktest.Name("stack-test")
	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterWorkflow(greet)
	w.RegisterActivity(shout)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, greet, "orderflow")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "hello, orderflow!" {
		t.Fatalf("result = %q", got)
	}
	// The server kept the history: the workflow is a real, closed execution.
	desc, err := c.DescribeWorkflow(ctx, queue, run.GetRunID())
	if err != nil {
		t.Fatal(err)
	}
	if s := desc.RawResponse.GetWorkflowExecutionInfo().GetStatus().String(); s != "Completed" {
		t.Fatalf("status = %s", s)
	}
}

func TestStackKafkaConsumerGroupCommit(t *testing.T) {
	brokers := stacktest.Brokers(t)
	topic := stacktest.Topic(t, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Balancer: &kafka.LeastBytes{}}
	var msgs []kafka.Message
	for i := range 10 {
		msgs = append(msgs, kafka.Message{Value: []byte(strconv.Itoa(i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	group := stacktest.Name("stack-group")
	newReader := func() *kafka.Reader {
		return kafka.NewReader(kafka.ReaderConfig{
			Brokers: brokers, GroupID: group, Topic: topic, StartOffset: kafka.FirstOffset,
			MaxWait: kafkaclient.FetchWait, HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second,
		})
	}
	// First member: read everything, commit only the first four messages it saw.
	r := newReader()
	seen := map[string]bool{}
	var committed []kafka.Message
	for len(seen) < 10 {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		seen[string(m.Value)] = true
		if len(committed) < 4 {
			committed = append(committed, m)
		}
	}
	if err := r.CommitMessages(ctx, committed...); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	// Second member of the same group: gets exactly what was not committed.
	r = newReader()
	defer r.Close()
	again := map[string]bool{}
	for len(again) < 6 {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("fetch after rejoin (got %d of 6): %v", len(again), err)
		}
		again[string(m.Value)] = true
	}
	for _, m := range committed {
		if again[string(m.Value)] {
			t.Fatalf("message %s was committed but delivered again", m.Value)
		}
	}
	// Nothing more is pending.
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if m, err := r.FetchMessage(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("extra message %q (err %v)", m.Value, err)
	}
}
