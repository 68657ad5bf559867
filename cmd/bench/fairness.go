package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/tenants/apikeys"
)

// 9. One tenant's flood beside another's orders. Tenant A sends a flood of orders
// as Kafka events at once; tenant B places fairOrders orders with Prefer: wait, one
// after another, at rest and then during A's flood, each timed until PAID. Both
// tenants have the default request budget (TENANT_RATE, TENANT_BURST), unlike the
// bench's own tenant, and the workers have the default provider budget
// (PAYMENTS_RATE 90). The same runs twice: with Temporal's fair task queues and
// with them off (scripts/stack fairness off, which restarts Temporal), so B's
// latency and A's throughput are each judged against the other in the same run.
const fairOrders = 20

// fairness runs scenario 9 with fair task queues (on) or without; the stack is
// left with them on.
func (b *bench) fairness(ctx context.Context, on bool) ([]Result, error) {
	label := "fair task queues"
	if !on {
		label = "no fairness"
		if err := b.stackSetting(ctx, "fairness", "off"); err != nil {
			return nil, err
		}
		defer func() {
			if err := b.stackSetting(context.WithoutCancel(ctx), "fairness", "on"); err != nil {
				fmt.Fprintln(b.out, "bench: restoring fairness:", err)
			}
		}()
	}
	// The product's defaults throughout: the provider budget shares the account
	// between tenants in turn, as the request budgets share the intake.
	if b.paymentsRate != "90" {
		b.paymentsRate = "90"
		b.consuming = "" // a worker with the budget takes the running one's place
	}
	if err := b.consumeRequests("-fair"); err != nil {
		return nil, err
	}
	flooder := b.other + "-a"
	if b.otherKey == "" {
		keys := apikeys.New(b.pool, apikeys.DefaultCacheTTL)
		key, err := keys.Create(ctx, b.other)
		if err != nil {
			return nil, err
		}
		if _, err := keys.Create(ctx, flooder); err != nil { // a tenant is one with a key
			return nil, err
		}
		b.otherKey = key
		if b.otherAPI, err = b.newClient(key); err != nil {
			return nil, err
		}
	}
	// A first order after a restart waits for the pollers to come back.
	if _, err := b.tenantOrders(ctx, fmt.Sprintf("warm-%t", on), 3); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	restLat, err := b.tenantOrders(ctx, fmt.Sprintf("rest-%t", on), fairOrders)
	if err != nil {
		return nil, fmt.Errorf("B at rest: %w", err)
	}
	rest := result(fmt.Sprintf("9%s. %s: B at rest", sub(on, 0), label), fairOrders, sum(restLat), restLat)

	began := time.Now()
	flood := 4 * b.n
	prefix := fmt.Sprintf("flood-%t", on)
	err = b.produceN(ctx, b.topics["requests"], flood, func(i int) []byte {
		return fmt.Appendf(nil, `{"eventId":"%s-%d","tenant":%q,"order":%s}`, prefix, i, flooder, orderJSON)
	})
	if err != nil {
		return nil, err
	}
	b.flooded += flood
	// B begins once a quarter of A's flood is in Temporal's queue.
	if err := b.poll(ctx, 5*time.Minute, 100*time.Millisecond, func() bool { return b.countStarted(ctx, prefix) >= flood/4 }); err != nil {
		return nil, fmt.Errorf("A's backlog: %w", err)
	}
	duringLat, err := b.tenantOrders(ctx, fmt.Sprintf("during-%t", on), fairOrders)
	if err != nil {
		return nil, fmt.Errorf("B during A's flood: %w", err)
	}
	during := result(fmt.Sprintf("9%s. %s: B during A's flood", sub(on, 1), label), fairOrders, sum(duringLat), duringLat)
	during.Note = fmt.Sprintf("p50 %.2fx B's at rest", during.P50ms/rest.P50ms)
	var paid int
	var last time.Time
	err = b.poll(ctx, 10*time.Minute, 250*time.Millisecond, func() bool {
		return b.pool.QueryRow(ctx, `SELECT count(*), COALESCE(max(paid_at), now()) FROM orders WHERE tenant = $1 AND status = 'PAID'`,
			flooder).Scan(&paid, &last) == nil && paid >= b.flooded
	})
	if err != nil {
		return nil, fmt.Errorf("A's flood: %d of %d paid: %w", paid, b.flooded, err)
	}
	a := result(fmt.Sprintf("9%s. %s: A's flood, events until PAID", sub(on, 2), label), flood, last.Sub(began), nil)
	a.Note = fmt.Sprintf("%d events at once from Kafka, admitted at A's default budget; from the produce to the last PAID", flood)
	return []Result{rest, during, a}, nil
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// sub names the rows of scenario 9: a-c with fairness, d-f without.
func sub(on bool, i int) string {
	if on {
		return string(rune('a' + i))
	}
	return string(rune('d' + i))
}

// consumeRequests makes sure the worker consumes the requests topic.
func (b *bench) consumeRequests(suffix string) error {
	if b.consuming == b.topics["requests"] {
		return nil
	}
	b.group += suffix
	b.procEnv["CONSUMER_GROUP"] = b.group
	return b.replaceWorker(b.topics["requests"])
}

// tenantOrders places n orders of tenant B with Prefer: wait, one after another as
// a checkout does, and times each until PAID (polling after a 202).
func (b *bench) tenantOrders(ctx context.Context, prefix string, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	for i := range n {
		t := time.Now()
		key := fmt.Sprintf("%s-%s-%d", b.run, prefix, i)
		placed, err := b.placeAs(b.otherAPI, key, 60*time.Second)
		if err != nil {
			return nil, err
		}
		id := placed.ID
		err = b.poll(ctx, 10*time.Minute, 20*time.Millisecond, func() bool {
			o, err := orderstore.New(b.pool).Get(ctx, b.other, id)
			return err == nil && o.Status == order.StatusPaid
		})
		if err != nil {
			return nil, fmt.Errorf("order %s: %w", id, err)
		}
		lat[i] = time.Since(t)
	}
	return lat, nil
}

// countStarted is how many of the flood's events the consumer has processed.
func (b *bench) countStarted(ctx context.Context, prefix string) int {
	var n int
	_ = b.pool.QueryRow(ctx, `SELECT count(*) FROM processed_events WHERE consumer_group = $1 AND event_id LIKE $2`, b.group, prefix+"-%").Scan(&n)
	return n
}

// stackSetting turns one of Temporal's settings the stack names (fairness,
// eager) on or off, restarting it.
func (b *bench) stackSetting(ctx context.Context, setting, state string) error {
	cmd := exec.CommandContext(ctx, b.stack, setting, state)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s %s: %w", b.stack, setting, state, err)
	}
	return nil
}

// produceN writes n messages to topic at once.
func (b *bench) produceN(ctx context.Context, topic string, n int, value func(i int) []byte) error {
	w := &kafka.Writer{Addr: kafka.TCP(b.kafka.Brokers...), Topic: topic, Balancer: &kafka.RoundRobin{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond, BatchSize: 500, Transport: b.kafka.Transport()}
	defer w.Close()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(strconv.Itoa(i)), Value: value(i)}
	}
	return w.WriteMessages(ctx, msgs...)
}
