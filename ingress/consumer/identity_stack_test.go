//go:build stack

package consumer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// orders counts the orders of the tenant in Postgres, by status and amount.
func (p *pipeline) orderAmounts(t *testing.T, tenant string) map[string]int64 {
	t.Helper()
	rows, err := p.Pool.Query(context.Background(), `SELECT workflow_id, amount FROM orders WHERE tenant = $1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var wf string
		var amount int64
		if err := rows.Scan(&wf, &amount); err != nil {
			t.Fatal(err)
		}
		out[wf] = amount
	}
	return out
}

// Event IDs are unique per producer only: the same eventId from two tenants is two
// orders, and an eventId reused by one tenant with another order is a dead letter
// that changes nothing, while the same event again is a duplicate.
func TestEventIDsAreScopedByTenantAndBody(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker(t)
	other := stacktest.Name("tenant")
	if _, err := apikeys.New(p.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	reused := []byte(strings.Replace(string(event("E", p.tenant)), `"quantity":1`, `"quantity":7`, 1))
	p.produce(t, kafka.Message{Key: []byte("E"), Value: event("E", p.tenant)})
	_, stop := p.runConsumer(t)
	stacktest.Eventually(t, 30*time.Second, "tenant A's event", func() bool { return p.processed(t) == 1 })
	p.produce(t,
		kafka.Message{Key: []byte("E"), Value: event("E", other)},    // tenant B, same eventId
		kafka.Message{Key: []byte("E"), Value: reused},               // tenant A, same eventId, other order
		kafka.Message{Key: []byte("E"), Value: event("E", p.tenant)}, // tenant A, the same event again
	)
	dead := p.deadLetters(t, 1)
	stacktest.Eventually(t, 30*time.Second, "all offsets to be committed", func() bool { return len(p.lagging(t)) == 0 })
	stop()

	if n := p.processed(t); n != 2 {
		t.Errorf("processed_events rows = %d, want 2 (one per tenant)", n)
	}
	value, err := p.Codec.Open(dead[0].Value)
	if got := stacktest.Header(dead[0], consumer.HeaderError); err != nil || !strings.Contains(got, "different order") || string(value) != string(reused) {
		t.Errorf("dead letter = %q (%v), error %q; want the reused event, saying so", value, err, got)
	}
	wfA, wfB := order.WorkflowID(p.tenant, order.FromEvent, "E"), order.WorkflowID(other, order.FromEvent, "E")
	stacktest.Eventually(t, 30*time.Second, "both orders in Postgres", func() bool {
		return len(p.orderAmounts(t, p.tenant)) == 1 && len(p.orderAmounts(t, other)) == 1
	})
	if a := p.orderAmounts(t, p.tenant)[wfA]; a != 100 {
		t.Errorf("tenant A's order amount = %d, want 100 (unchanged by the reused eventId)", a)
	}
	for _, wf := range []string{wfA, wfB} {
		if n := stacktest.Runs(t, p.Temporal, wf); n != 1 {
			t.Errorf("%s: %d runs, want 1", wf, n)
		}
	}
}

// A head message that never settles (its dead letter cannot be written) holds its
// partition: later messages settle, but the partition stops taking more at
// MaxUncommitted, and its committed offset never passes the head.
func TestStuckHeadMessageBoundsMemory(t *testing.T) {
	p := newPipeline(t)
	msgs := []kafka.Message{{Key: []byte("k"), Value: []byte("poison")}}
	for range 60 {
		msgs = append(msgs, kafka.Message{Key: []byte("k"), Value: event(stacktest.Name("after"), p.tenant)})
	}
	p.produce(t, msgs...)
	const limit = 16
	// The dead-letter topic does not exist and is not created: the head never settles.
	reg, stop := p.runConsumerWith(t, consumer.Options{Group: p.group, CommitInterval: 50 * time.Millisecond,
		InFlight: 4, MaxUncommitted: limit}, stacktest.Name("missing-dlq"))
	stacktest.Eventually(t, 30*time.Second, "the partition to fill up to its limit", func() bool {
		return p.processed(t) >= limit-4
	})
	time.Sleep(time.Second) // would it take more?
	held := counter(t, reg, "orderflow_consumer_uncommitted_messages")
	processed := p.processed(t)
	lag := p.lagging(t)
	stop()

	if processed > limit || held > limit+4*4 || held < limit-1 {
		t.Errorf("processed %d, gauge %v; want both bounded by the limit %d (plus the fetch buffer)", processed, held, limit)
	}
	for part, offs := range lag {
		if offs[1] > 0 && offs[0] != 0 {
			t.Errorf("partition %d committed to %d past its stuck head at offset 0", part, offs[0])
		}
	}
	if len(lag) != 1 {
		t.Errorf("lagging partitions = %v, want exactly the stuck one", lag)
	}
}

// A tenant whose API keys are all revoked is refused once the consumer's tenant
// cache expires: its events go to the dead-letter topic.
func TestRevokedTenantIsRefusedAfterTheCacheTTL(t *testing.T) {
	p := newPipeline(t)
	p.produce(t, kafka.Message{Key: []byte("a"), Value: event("before", p.tenant)})
	_, stop := p.runConsumer(t)
	stacktest.Eventually(t, 30*time.Second, "the first event", func() bool { return p.processed(t) == 1 })
	ks := apikeys.New(p.Pool, apikeys.DefaultCacheTTL)
	keys, err := ks.List(context.Background(), p.tenant)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys = %v, %v", keys, err)
	}
	if err := ks.Revoke(context.Background(), keys[0].Prefix); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the test consumer's tenant cache TTL is 200 ms
	p.produce(t, kafka.Message{Key: []byte("a"), Value: event("after", p.tenant)})
	dead := p.deadLetters(t, 1)
	stop()
	if !strings.Contains(stacktest.Header(dead[0], consumer.HeaderError), "unknown tenant") || p.processed(t) != 1 {
		t.Errorf("after revocation: dead letter %q, processed %d; want refused", stacktest.Header(dead[0], consumer.HeaderError), p.processed(t))
	}
}
