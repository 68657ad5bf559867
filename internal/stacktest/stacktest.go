// Package stacktest connects integration tests to the real local stack started by
// scripts/stack. Without the stack, tests skip, unless ORDERFLOW_REQUIRE_STACK=1
// (set by make test), in which case they fail.
package stacktest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
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
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/orderflow/orderflow/internal/platform/database"
)

// Env returns the variables of the stack's env file.
func Env(tb testing.TB) map[string]string {
	tb.Helper()
	path := os.Getenv("ORDERFLOW_STACK_ENV")
	if path == "" {
		path = findEnvFile()
	}
	f, err := os.Open(path)
	if err != nil || path == "" {
		if os.Getenv("ORDERFLOW_REQUIRE_STACK") == "1" {
			tb.Fatalf("the local stack is required but its env file %q cannot be read (%v): run scripts/stack up", path, err)
		}
		tb.Skip("local stack not running (scripts/stack up); set ORDERFLOW_REQUIRE_STACK=1 to fail instead")
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = v
		}
	}
	return env
}

// findEnvFile looks for .stack/env in the working directory and its parents.
func findEnvFile() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, ".stack", "env")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Pool returns a pool on the stack's database with the migrations applied.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	env := Env(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := database.Open(ctx, env["DATABASE_URL"], 10)
	if err != nil {
		tb.Fatalf("open database: %v", err)
	}
	tb.Cleanup(pool.Close)
	if err := database.Migrate(ctx, pool, Logger(tb)); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	return pool
}

// Temporal returns a client of the stack's Temporal server.
func Temporal(tb testing.TB) client.Client {
	tb.Helper()
	env := Env(tb)
	c, err := client.Dial(client.Options{
		HostPort:  env["TEMPORAL_ADDRESS"],
		Namespace: env["TEMPORAL_NAMESPACE"],
		Logger:    tlog.NewStructuredLogger(Logger(tb)),
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

// Service runs scripts/stack ACTION SERVICE (stop, start, restart) for fault tests.
func Service(tb testing.TB, action, service string) {
	tb.Helper()
	out, err := exec.Command(Env(tb)["ORDERFLOW_STACK_SCRIPT"], action, service).CombinedOutput()
	if err != nil {
		tb.Fatalf("stack %s %s: %v\n%s", action, service, err, out)
	}
}

// Name returns prefix plus a random suffix, to keep tests apart on a shared stack.
func Name(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

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
	topic := Name("test")
	conn, err := kafka.Dial("tcp", Brokers(tb)[0])
	if err != nil {
		tb.Fatalf("dial kafka: %v", err)
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		tb.Fatalf("kafka controller: %v", err)
	}
	cc, err := kafka.Dial("tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		tb.Fatalf("dial kafka controller: %v", err)
	}
	defer cc.Close()
	if err := cc.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}); err != nil {
		tb.Fatalf("create topic %s: %v", topic, err)
	}
	// Wait until the broker serves every partition, so first writes do not fail.
	Eventually(tb, 10*time.Second, "topic "+topic+" to have leaders", func() bool {
		ps, err := conn.ReadPartitions(topic)
		if err != nil || len(ps) != partitions {
			return false
		}
		for _, p := range ps {
			if p.Leader.Host == "" {
				return false
			}
			// The leader answers for the partition only once it has created it.
			lc, err := kafka.DialLeader(context.Background(), "tcp", Brokers(tb)[0], topic, p.ID)
			if err != nil {
				return false
			}
			_, err = lc.ReadLastOffset()
			lc.Close()
			if err != nil {
				return false
			}
		}
		return true
	})
	return topic
}

// Runs counts the runs of a workflow ID known to Temporal's visibility store.
func Runs(tb testing.TB, c client.Client, workflowID string) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowId = %q", workflowID),
	})
	if err != nil {
		tb.Fatalf("list runs of %s: %v", workflowID, err)
	}
	return len(resp.Executions)
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
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: Brokers(tb), Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
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
