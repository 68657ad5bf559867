//go:build stack

package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// gatedBudget holds one tenant's events until it is opened; the others' pass.
type gatedBudget struct {
	tenant string
	open   chan struct{}
	waits  atomic.Int64
}

func (b *gatedBudget) Wait(ctx context.Context, tenant string) error {
	if tenant != b.tenant {
		return nil
	}
	b.waits.Add(1)
	select {
	case <-b.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A tenant over its budget does not hold the other tenants' events in its
// partitions: with one partition's window (16) full of the flooding tenant's
// events, the other's behind them still become orders while the flood waits;
// once its budget allows, every flooded event becomes exactly one order too,
// read again from the topic, and the partition commits to its end.
func TestATenantOverItsBudgetDoesNotHoldTheOthersEvents(t *testing.T) {
	p := newPipeline(t)
	other := stacktest.Name("other")
	if _, err := apikeys.New(p.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	const flood, behind = 200, 40
	var msgs []kafka.Message
	for i := range flood {
		msgs = append(msgs, kafka.Message{Key: []byte("one"), Value: event(fmt.Sprintf("flood-%d", i), p.tenant)})
	}
	for i := range behind {
		msgs = append(msgs, kafka.Message{Key: []byte("one"), Value: event(fmt.Sprintf("behind-%d", i), other)})
	}
	p.produce(t, msgs...) // one key: one partition, the flood first

	budget := &gatedBudget{tenant: p.tenant, open: make(chan struct{})}
	reg, _ := p.runConsumerWith(t, consumer.Options{Group: p.group, CommitInterval: 50 * time.Millisecond,
		InFlight: 4, MaxUncommitted: 16, Budget: budget}, p.dlq)

	settled := func(tenant string) int {
		var n int
		if err := p.Pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_events WHERE consumer_group = $1 AND tenant = $2`,
			p.group, tenant).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	within(t, time.Minute, func() error {
		if n := settled(other); n != behind {
			return fmt.Errorf("the other tenant's events settled: %d of %d, behind %d waits for the flood's budget", n, behind, budget.waits.Load())
		}
		return nil
	})
	if n := settled(p.tenant); n != 0 {
		t.Fatalf("%d of the flood's events settled with its budget shut", n)
	}
	if n := counter(t, reg, "orderflow_consumer_parked_total"); n == 0 {
		t.Fatal("no event was parked, yet the other tenant's went past a full window")
	}

	close(budget.open)
	within(t, time.Minute, func() error {
		if n := settled(p.tenant); n != flood {
			return fmt.Errorf("the flood's events settled: %d of %d", n, flood)
		}
		if lag := p.lagging(t); len(lag) != 0 {
			return fmt.Errorf("partitions behind their end (committed, end): %v", lag)
		}
		return nil
	})
	if n := counter(t, reg, "orderflow_consumer_duplicates_total"); n != 0 {
		t.Fatalf("%v duplicates: a parked event was read again as well as run", n)
	}
	if n := counter(t, reg, "orderflow_consumer_workflow_starts_total"); n != flood+behind {
		t.Fatalf("%v workflow starts of %d events", n, flood+behind)
	}
}

// within polls check until it passes or d has passed, then fails with its last
// answer.
func within(t *testing.T, d time.Duration, check func() error) {
	t.Helper()
	var last error
	if !stacktest.Within(d, func() bool { last = check(); return last == nil }) {
		t.Fatal(last)
	}
}
