//go:build stack

package consumer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// secured is the stack's SASL_SSL listener as one principal sees it, and the
// settings a process would be given for it.
func secured(t *testing.T, principal, password string) (kafkaclient.Cluster, map[string]string) {
	t.Helper()
	return stacktest.KafkaPrincipal(t, principal, password)
}

func write(c kafkaclient.Cluster, topic string, value []byte) error {
	w := kafkaclient.NewWriter(c, topic)
	defer w.Close()
	w.WriteTimeout = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: value})
}

// On the SASL_SSL listener, ACLs decide: a wrong password, a principal without an
// ACL on the topic and the worker writing where it only reads are all refused, and
// nothing lands. Each case writes a value of its own, looked for afterwards: other
// tests write to orders.requested at the same time.
func TestSecuredKafkaRefusesWhatItShould(t *testing.T) {
	topic := stacktest.Topic(t, 1)
	for name, try := range map[string]func(value []byte) error{
		"wrong password": func(v []byte) error {
			c, _ := secured(t, "orderflow-producer", "not-the-password")
			return write(c, topic, v)
		},
		"producer on a topic it has no ACL for": func(v []byte) error {
			c, _ := secured(t, "orderflow-producer", "")
			return write(c, topic, v)
		},
		"worker writing to orders.requested, which it only reads": func(v []byte) error {
			c, _ := secured(t, "orderflow-worker", "")
			return write(c, "orders.requested", v)
		},
	} {
		value := []byte(stacktest.Name("refused"))
		before := endOffsets(t, "orders.requested")
		err := try(value)
		var kerr kafka.Error
		t.Logf("%s: %v", name, err)
		if err == nil {
			t.Errorf("%s: written", name)
		} else if !errors.As(err, &kerr) && !strings.Contains(err.Error(), "SASL") && !strings.Contains(err.Error(), "uthori") {
			t.Errorf("%s: refused for another reason: %v", name, err)
		}
		if n := stacktest.EndOffset(t, topic, 0); n != 0 {
			t.Fatalf("%s: %d messages in %s", name, n, topic)
		}
		if landedSince(t, "orders.requested", before, value) {
			t.Fatalf("%s: the refused value is in orders.requested", name)
		}
	}
}

// endOffsets returns the end offset of each partition of topic.
func endOffsets(t *testing.T, topic string) map[int]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := kafkaclient.Partitions(ctx, stacktest.Kafka(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	ends := make(map[int]int64, n)
	for p := range n {
		ends[p] = stacktest.EndOffset(t, topic, p)
	}
	return ends
}

// landedSince reports whether a message with value was written to topic after the
// offsets in from.
func landedSince(t *testing.T, topic string, from map[int]int64, value []byte) bool {
	t.Helper()
	for p, start := range from {
		if found := landedIn(t, topic, p, start, value); found {
			return true
		}
	}
	return false
}

// landedIn reads partition p of topic from start to its end (or until nothing more
// comes for 5 s: the end may be a transaction's marker, never read) and reports
// whether value is among the messages.
func landedIn(t *testing.T, topic string, p int, start int64, value []byte) bool {
	t.Helper()
	end := stacktest.EndOffset(t, topic, p)
	r := stacktest.Kafka(t).NewReader(kafka.ReaderConfig{Topic: topic, Partition: p, MaxWait: kafkaclient.FetchWait})
	defer r.Close()
	if err := r.SetOffset(start); err != nil {
		t.Fatal(err)
	}
	for r.Offset() < end {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		m, err := r.ReadMessage(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return false
		}
		if err != nil {
			t.Fatalf("read %s/%d: %v", topic, p, err)
		}
		if string(m.Value) == string(value) {
			return true
		}
	}
	return false
}

// The worker process on the SASL_SSL listener as its own principal: it reads the
// requests, places the order, and its events and dead letters are written, all
// authenticated and encrypted.
func TestWorkerOnSecuredKafka(t *testing.T) {
	p := newPipeline(t)
	admin, _ := secured(t, "orderflow-admin", "")
	if err := write(admin, p.requests, event("secured-1", p.tenant)); err != nil {
		t.Fatal(err)
	}
	if err := write(admin, p.requests, []byte("not json")); err != nil {
		t.Fatal(err)
	}
	_, settings := secured(t, "orderflow-worker", "")
	env := p.workerEnv(stacktest.FreeAddr(t), settings)
	stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), env)
	stacktest.Eventually(t, 60*time.Second, "the event placed and the poison dead-lettered", func() bool {
		return p.processed(t) == 1 && stacktest.EndOffset(t, p.dlq, 0) == 1 && len(p.lagging(t)) == 0
	})
	wid := order.WorkflowID(p.tenant, order.FromEvent, "secured-1")
	stacktest.Eventually(t, 30*time.Second, "OrderPaid on the events topic", func() bool { return stacktest.EndOffset(t, p.Topic, 0) >= 1 })
	if n := stacktest.Runs(t, p.Temporal, wid); n != 1 {
		t.Fatalf("%d workflows for the event", n)
	}
}
