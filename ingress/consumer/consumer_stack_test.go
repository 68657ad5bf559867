//go:build stack

package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/ingress/refunds"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/workertest"
)

const orderJSON = `{"customer_id":"cus_1","currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":100}],"payment_method":"pm_card_visa"}`

func event(id, tenant string) []byte {
	return []byte(fmt.Sprintf(`{"eventId":%q,"tenant":%q,"order":%s}`, id, tenant, orderJSON))
}

// pipeline is a requests topic (4 partitions), a DLQ, a group and a tenant on the
// real stack, plus the order pipeline of stacktest.
type pipeline struct {
	*workertest.Orders
	requests, dlq, group, tenant string
}

func newPipeline(t *testing.T) *pipeline {
	t.Helper()
	p := &pipeline{Orders: workertest.NewOrders(t), group: stacktest.Name("group"), tenant: stacktest.Name("tenant")}
	p.requests = stacktest.Topic(t, 4)
	p.dlq = stacktest.Topic(t, 1)
	if _, err := apikeys.New(p.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), p.tenant); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *pipeline) produce(t *testing.T, msgs ...kafka.Message) {
	t.Helper()
	w := p.writer(p.requests)
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// writer has a transport of its own: the shared default one caches topic metadata
// for seconds and would not know a topic this test just created.
func (p *pipeline) writer(topic string) *kafka.Writer {
	return &kafka.Writer{Addr: kafka.TCP(p.Kafka.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: p.Kafka.Transport()}
}

// runConsumer runs the consumer in the test process until the returned stop is called.
func (p *pipeline) runConsumer(t *testing.T) (reg *prometheus.Registry, stop func()) {
	t.Helper()
	return p.runConsumerWith(t, consumer.Options{Group: p.group, CommitInterval: 50 * time.Millisecond}, p.dlq)
}

// runConsumerWith runs a consumer with opts, dead-lettering to dlqTopic.
func (p *pipeline) runConsumerWith(t *testing.T, opts consumer.Options, dlqTopic string) (reg *prometheus.Registry, stop func()) {
	t.Helper()
	reg = prometheus.NewRegistry()
	opts.Topic = p.requests
	group, err := kafkaclient.NewConsumerGroup(p.Kafka, p.group, p.requests, stacktest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	readers := func(part int) consumer.PartitionReader {
		return kafkaclient.NewPartitionReader(p.Kafka, p.requests, part)
	}
	dlq := kafkaclient.NewWriter(p.Kafka, dlqTopic)
	c := consumer.New(opts, group, readers, dlq, p.Codec,
		p.ConsumerIntake(p.group), apikeys.NewTenants(p.Pool, 200*time.Millisecond),
		stacktest.Logger(t), consumer.NewMetrics(reg), p.Tracing)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("consumer: %v", err)
			}
			dlq.Close()
		})
	}
	t.Cleanup(stop)
	return reg, stop
}

func (p *pipeline) processed(t *testing.T) int {
	t.Helper()
	var n int
	if err := p.Pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_events WHERE consumer_group = $1`, p.group).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// lagging returns the partitions whose committed offset is behind their end.
func (p *pipeline) lagging(t *testing.T) map[int][2]int64 {
	t.Helper()
	lag := map[int][2]int64{}
	for part, committed := range p.committedOffsets(t) {
		if end := stacktest.EndOffset(t, p.requests, part); committed != end {
			lag[part] = [2]int64{committed, end}
		}
	}
	return lag
}

// committedOffsets returns the group's committed offset of each partition (0 when
// none).
func (p *pipeline) committedOffsets(t *testing.T) map[int]int64 {
	t.Helper()
	return stacktest.Committed(t, p.Kafka.Client(), p.group, p.requests, 4)
}

func (p *pipeline) deadLetters(t *testing.T, want int) []kafka.Message {
	t.Helper()
	return stacktest.Messages(t, p.dlq, want)
}

func TestDuplicatesPoisonAndPartitions(t *testing.T) {
	p := newPipeline(t)
	unknownTenant := stacktest.Name("unknown")
	var msgs []kafka.Message
	valid := map[string]bool{}
	for i := range 8 {
		id := fmt.Sprintf("evt-%d", i)
		valid[id] = true
		msgs = append(msgs, kafka.Message{Key: []byte(id), Value: event(id, p.tenant)})
	}
	// The same event three times, on different partitions.
	valid["dup"] = true
	for _, key := range []string{"a", "b", "c"} {
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: event("dup", p.tenant)})
	}
	poison := []kafka.Message{
		{Key: []byte("poison"), Value: []byte("not json at all")},
		{Key: []byte("poison"), Value: []byte(`{"tenant":"x","order":{}}`)},
		{Key: []byte("poison"), Value: event("unknown-tenant", unknownTenant)},
		{Key: []byte("poison"), Value: []byte(strings.Replace(string(event("bad-order", p.tenant)), `"quantity":1`, `"quantity":0`, 1))},
	}
	msgs = append(msgs, poison...)
	// Valid events after the poison, on the poison's partition.
	for i := range 3 {
		id := fmt.Sprintf("after-poison-%d", i)
		valid[id] = true
		msgs = append(msgs, kafka.Message{Key: []byte("poison"), Value: event(id, p.tenant)})
	}
	p.produce(t, msgs...)

	reg, stop := p.runConsumer(t)
	stacktest.Eventually(t, 60*time.Second, "every valid event to be processed", func() bool { return p.processed(t) == len(valid) })
	dead := p.deadLetters(t, len(poison))
	stacktest.Eventually(t, 30*time.Second, "all offsets to be committed", func() bool { return len(p.lagging(t)) == 0 })
	stop()

	for id := range valid {
		wid := order.WorkflowID(p.tenant, order.FromEvent, id)
		stacktest.Eventually(t, 10*time.Second, "workflow "+wid+" to be visible", func() bool { return stacktest.Runs(t, p.Temporal, wid) >= 1 })
		if n := stacktest.Runs(t, p.Temporal, wid); n != 1 {
			t.Errorf("event %s started %d workflows", id, n)
		}
	}
	metrics := stacktest.MetricsText(reg)
	if d := stacktest.Metric(t, metrics, "orderflow_consumer_duplicates_total"); d != 2 {
		t.Errorf("duplicates absorbed = %v, want 2", d)
	}
	if d := stacktest.Metric(t, metrics, "orderflow_consumer_dead_lettered_total"); int(d) != len(poison) {
		t.Errorf("dead-lettered = %v, want %d", d, len(poison))
	}
	if s := stacktest.Metric(t, metrics, "orderflow_consumer_workflow_starts_total"); int(s) != len(valid) {
		t.Errorf("starts = %v, want %d", s, len(valid))
	}
	// Poison messages of one partition are handled concurrently, so the dead
	// letters may come in any order.
	want := map[string]bool{}
	for _, m := range poison {
		want[string(m.Value)] = true
	}
	for i, m := range dead {
		if stacktest.Header(m, consumer.HeaderTopic) != p.requests || stacktest.Header(m, consumer.HeaderError) == "" ||
			stacktest.Header(m, consumer.HeaderPartition) == "" || stacktest.Header(m, consumer.HeaderOffset) == "" {
			t.Errorf("dead letter %d headers: %v", i, m.Headers)
		}
		value, err := p.Codec.Open(m.Value)
		if err != nil || stacktest.Header(m, consumer.HeaderSealed) != "1" {
			t.Fatalf("dead letter %d: not sealed (%v)", i, err)
		}
		if !want[string(value)] {
			t.Errorf("dead letter %d = %q: not one of the poison messages, or twice", i, value)
		}
		delete(want, string(value))
		t.Logf("dead letter from offset %s: %s", stacktest.Header(m, consumer.HeaderOffset), stacktest.Header(m, consumer.HeaderError))
	}

	// Once the tenant exists, a redrive brings the dead-lettered event back, once: a
	// second run skips it. A dead letter forged to name another topic is refused.
	if _, err := apikeys.New(p.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), unknownTenant); err != nil {
		t.Fatal(err)
	}
	elsewhere := stacktest.Topic(t, 1)
	forged := kafka.Message{Value: event("forged", p.tenant), Headers: []kafka.Header{{Key: consumer.HeaderTopic, Value: []byte(elsewhere)}}}
	dw := p.writer(p.dlq)
	if err := dw.WriteMessages(context.Background(), forged); err != nil {
		t.Fatal(err)
	}
	dw.Close()
	w := p.writer("")
	defer w.Close()
	opts := consumer.RedriveOptions{DLQTopic: p.dlq, RequestsTopic: p.requests, Kinds: kindNames(), Select: []consumer.Selector{
		{Tenant: unknownTenant, Kind: order.Kind, EventID: "unknown-tenant"}, {Tenant: p.tenant, Kind: order.Kind, EventID: "forged"}}}
	for run := range 2 {
		sum, err := consumer.Redrive(context.Background(), p.Kafka, opts, w, consumer.NewRedrives(p.Pool), p.Codec, slog.New(slog.NewTextHandler(io.Discard, nil)))
		t.Logf("redrive %d: %s", run+1, sum)
		want := consumer.RedriveSummary{Read: len(poison) + 1, Redriven: 1, OtherTopic: 1, Unselected: len(poison) - 1}
		if run == 1 {
			want.Redriven, want.Before = 0, 1
		}
		if err != nil || sum != want {
			t.Fatalf("redrive %d: %+v, %v; want %+v", run+1, sum, err, want)
		}
	}
	reg, _ = p.runConsumer(t)
	stacktest.Eventually(t, 30*time.Second, "the redriven event to be processed", func() bool { return p.processed(t) == len(valid)+1 })
	wid := order.WorkflowID(unknownTenant, order.FromEvent, "unknown-tenant")
	stacktest.Eventually(t, 10*time.Second, "the redriven workflow", func() bool { return stacktest.Runs(t, p.Temporal, wid) == 1 })
	if n := counter(t, reg, "orderflow_consumer_duplicates_total"); n != 0 {
		t.Fatalf("%v redriven events came back twice", n)
	}
	if n := stacktest.EndOffset(t, elsewhere, 0); n != 0 {
		t.Fatalf("%d messages written to %s, named by a forged dead letter", n, elsewhere)
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return stacktest.Metric(t, stacktest.MetricsText(reg), name)
}

func (p *pipeline) workerEnv(opsAddr string, extra map[string]string) map[string]string {
	env := p.WorkerEnv()
	env["REQUESTS_TOPIC"] = p.requests
	env["DLQ_TOPIC"] = p.dlq
	env["CONSUMER_GROUP"] = p.group
	env["OPS_ADDR"] = opsAddr
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func scrape(t *testing.T, opsAddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + opsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// The worker is killed with SIGKILL after its starts were acknowledged and before
// their offsets were committed (the commit interval is set beyond the test, which
// forces the window). The restarted worker gets every event not committed again
// and starts nothing.
func TestKilledBetweenStartAndCommitStartsNothingNew(t *testing.T) {
	t.Parallel() // its own tenants, task queue and sandbox: it runs beside the package's other slow tests
	p := newPipeline(t)
	const n = 20
	var msgs []kafka.Message
	for i := range n {
		id := fmt.Sprintf("evt-%d", i)
		msgs = append(msgs, kafka.Message{Key: []byte(id), Value: event(id, p.tenant)})
	}
	p.produce(t, msgs...)

	ops := stacktest.FreeAddr(t)
	first := stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), p.workerEnv(ops, map[string]string{"CONSUMER_COMMIT_INTERVAL": "1h"}))
	stacktest.Eventually(t, 60*time.Second, "all starts to be acknowledged", func() bool { return p.processed(t) == n })
	first.Kill(t)
	// What the killed worker had not committed comes again: all of it, unless a
	// rebalance (a heartbeat missed on a busy machine) committed some meanwhile.
	var uncommitted int64
	for _, l := range p.lagging(t) {
		uncommitted += l[1] - l[0]
	}
	if uncommitted == 0 {
		t.Fatal("offsets were committed: the window between start and commit was not forced")
	}

	ops = stacktest.FreeAddr(t)
	stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), p.workerEnv(ops, nil))
	stacktest.Eventually(t, 60*time.Second, "the redelivered events to be committed", func() bool { return len(p.lagging(t)) == 0 })
	metrics := scrape(t, ops)
	dups, starts := stacktest.Metric(t, metrics, "orderflow_consumer_duplicates_total"), stacktest.Metric(t, metrics, "orderflow_consumer_workflow_starts_total")
	t.Logf("after SIGKILL between start and commit: %v redelivered events absorbed, %v new starts", dups, starts)
	if dups != float64(uncommitted) || starts != 0 {
		t.Fatalf("duplicates %v, starts %v: want %d (the events not committed) and 0", dups, starts, uncommitted)
	}
	if got := p.processed(t); got != n {
		t.Fatalf("processed events = %d", got)
	}
	runs := stacktest.RunsOf(t, p.Temporal, fmt.Sprintf("TaskQueue = %q", p.Queue))
	for i := range n {
		wid := order.WorkflowID(p.tenant, order.FromEvent, fmt.Sprintf("evt-%d", i))
		if runs[wid] != 1 {
			t.Fatalf("%s has %d runs", wid, runs[wid])
		}
	}
}

// consumerDrain is how long a stopping worker's consumer lets in-flight starts
// settle (consumer.Options.DrainTimeout's default).
const consumerDrain = 10 * time.Second

// SIGTERM while events flow and charges are in flight: the worker exits 0 within its
// deadline; after a restart every event has exactly one workflow and one charge.
func TestGracefulStopUnderLoad(t *testing.T) {
	t.Parallel() // its own tenants, task queue and sandbox: it runs beside the package's other slow tests
	p := newPipeline(t)
	p.Sim.SetFaults(sandbox.Faults{LatencyMS: 300})
	bin := stacktest.Binary(t, "cmd/worker")
	ops := stacktest.FreeAddr(t)
	first := stacktest.Start(t, bin, p.workerEnv(ops, nil))

	// A write that fails (an acknowledgement late on a busy broker) may have
	// landed: it is written again until it is acknowledged, as a producer would,
	// so produced is exactly the events the broker has, some perhaps twice.
	var stop atomic.Bool
	var produced []string
	var mu sync.Mutex
	// ended is cancelled only when the row ends: a row that fails before it waits
	// for the producer stops it there, mid-write too.
	ended, end := context.WithCancel(context.Background())
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		w := p.writer(p.requests)
		defer w.Close()
		for i := 0; !stop.Load() && i < 2000; i++ {
			id := fmt.Sprintf("load-%d", i)
			msg := kafka.Message{Key: []byte(id), Value: event(id, p.tenant)}
			if !stacktest.Within(2*time.Minute, func() bool {
				err := w.WriteMessages(ended, msg)
				if ended.Err() != nil {
					return true // the row has ended: nothing is written again
				}
				if err != nil {
					t.Logf("produce %s: %v; writing it again", id, err)
				}
				return err == nil
			}) {
				t.Errorf("produce %s: not acknowledged in 2 minutes", id)
				return
			}
			if ended.Err() != nil {
				return
			}
			mu.Lock()
			produced = append(produced, id)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	// The producer never outlives the row: a row that ends before it waits for
	// the producer (a failure) stops it and waits for it here.
	t.Cleanup(func() {
		stop.Store(true)
		end()
		<-producerDone
	})

	// A minute or more on a machine the other lanes keep busy.
	stacktest.Eventually(t, 3*time.Minute, "charges to be in flight", func() bool { return p.Sim.InFlight() > 0 && p.processed(t) > 20 })
	began := time.Now()
	first.Signal(syscall.SIGTERM)
	code := first.Wait(t, 30*time.Second)
	took := time.Since(began)
	t.Logf("SIGTERM under load: exit %d after %s", code, took.Round(time.Millisecond))
	if code != 0 || took > 25*time.Second {
		t.Fatalf("exit code %d after %s: want 0 within 25s", code, took)
	}

	// A clean stop finishes its in-flight starts and commits them: what was started
	// is exactly what is committed, so nothing is delivered again. A drain that ran
	// to its bound (the consumer's 10 s: Temporal answered no start in time, as on
	// a machine the other lanes keep busy) abandons what did not settle, by design:
	// what it left is delivered again and absorbed, which the ledger below checks.
	ranOut := took >= consumerDrain
	var committed int64
	for _, off := range p.committedOffsets(t) {
		committed += off
	}
	if started := p.processed(t); int64(started) != committed {
		if !ranOut {
			t.Fatalf("after SIGTERM: %d events started, %d committed; want equal (no redelivery)", started, committed)
		}
		t.Logf("the drain ran to its bound: %d events started, %d committed, the rest delivered again", started, committed)
	}

	time.Sleep(time.Second) // events keep arriving while no worker runs
	ops2 := stacktest.FreeAddr(t)
	stacktest.Start(t, bin, p.workerEnv(ops2, nil))
	time.Sleep(time.Second)
	stop.Store(true)
	<-producerDone
	mu.Lock()
	ids := append([]string(nil), produced...)
	mu.Unlock()

	// The waits last while events are processed and orders paid: a busy machine
	// slows them, and only work that stopped is a failure.
	if err := stacktest.Progressing(2*time.Minute, 10*time.Minute, len(ids), func() int { return p.processed(t) }); err != nil {
		t.Fatalf("events processed: %v", err)
	}
	paid := func() int {
		var n int
		_ = p.Pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE tenant = $1 AND status = 'PAID'`, p.tenant).Scan(&n)
		return n
	}
	if err := stacktest.Progressing(2*time.Minute, 10*time.Minute, len(ids), paid); err != nil {
		t.Fatalf("orders paid: %v", err)
	}
	if n, m := p.processed(t), paid(); n != len(ids) || m != len(ids) {
		t.Fatalf("%d events processed and %d orders paid, want %d of each", n, m, len(ids))
	}
	for _, id := range ids {
		key := order.PaymentKey(order.WorkflowID(p.tenant, order.FromEvent, id), "confirm", 0)
		if n := len(p.Sim.Charges(key)); n != 1 {
			t.Fatalf("event %s: %d charges", id, n)
		}
	}
	if n := len(p.Sim.Charges("")); n != len(ids) {
		t.Fatalf("charges = %d, events = %d", n, len(ids))
	}
	d := stacktest.Metric(t, scrape(t, ops2), "orderflow_consumer_duplicates_total")
	if d != 0 && !ranOut {
		t.Fatalf("the restarted worker saw %v redelivered events, want 0", d)
	}
	t.Logf("%d events produced across the restart: %d workflows paid, %d charges, %v redeliveries", len(ids), len(ids), len(p.Sim.Charges("")), d)
}

// An operator recreates the dead-letter topic after a redrive: its new letters
// sit at the offsets the old ones had. Each is redriven, once, as the letter it
// is; none is taken for one redriven before.
func TestRedriveAfterTheDeadLetterTopicIsRecreated(t *testing.T) {
	p := newPipeline(t)
	tenants := apikeys.New(p.Pool, apikeys.DefaultCacheTTL)
	w := p.writer("")
	defer w.Close()
	redrive := func(want consumer.RedriveSummary) {
		t.Helper()
		opts := consumer.RedriveOptions{DLQTopic: p.dlq, RequestsTopic: p.requests}
		sum, err := consumer.Redrive(context.Background(), p.Kafka, opts, w, consumer.NewRedrives(p.Pool), p.Codec, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil || sum != want {
			t.Fatalf("redrive: %+v, %v; want %+v", sum, err, want)
		}
	}
	// An event for a tenant that does not exist yet is dead-lettered; once the
	// tenant exists, the redrive makes it an order.
	for round, id := range []string{"first", "second"} {
		late := stacktest.Name("late")
		p.produce(t, kafka.Message{Key: []byte(id), Value: event(id, late)})
		_, stop := p.runConsumer(t)
		if dead := p.deadLetters(t, 1); stacktest.Header(dead[0], consumer.HeaderGroup) != p.group {
			t.Fatalf("dead letter %v", dead[0].Headers)
		}
		if _, err := tenants.Create(context.Background(), late); err != nil {
			t.Fatal(err)
		}
		redrive(consumer.RedriveSummary{Read: 1, Redriven: 1})
		redrive(consumer.RedriveSummary{Read: 1, Before: 1})
		wid := order.WorkflowID(late, order.FromEvent, id)
		stacktest.Eventually(t, 30*time.Second, "the redriven event's workflow", func() bool { return stacktest.Runs(t, p.Temporal, wid) == 1 })
		stop()
		if round == 0 {
			stacktest.RecreateTopic(t, p.dlq, 1)
		}
	}
}

// An operator lists a dead letter (where from and why, not its value), opens it
// with the payload keys, and a dry run of its redrive counts it without writing
// or recording it: the real redrive after it still sends it, once.
func TestDeadLettersAreListedOpenedAndDryRun(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	w := p.writer("")
	defer w.Close()
	late := stacktest.Name("late")
	p.produce(t, kafka.Message{Key: []byte("k"), Value: event("dry", late)})
	_, stop := p.runConsumer(t)
	p.deadLetters(t, 1)
	stop()

	var infos []consumer.LetterInfo
	var letters []kafka.Message
	if err := consumer.Letters(ctx, p.Kafka, p.dlq, func(m kafka.Message, _ int64) error {
		infos, letters = append(infos, consumer.Describe(m)), append(letters, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].FromTopic != p.requests || infos[0].Group != p.group || infos[0].Error == "" || !infos[0].Sealed || !infos[0].Whole {
		t.Fatalf("listed %+v", infos)
	}
	if bytes.Contains(letters[0].Value, []byte(late)) {
		t.Fatal("the dead letter's value is readable without the keys")
	}
	m, err := consumer.Letter(ctx, p.Kafka, p.dlq, infos[0].Partition, infos[0].Offset)
	if err != nil {
		t.Fatal(err)
	}
	orig, whole, err := consumer.Open(m, p.Codec)
	if err != nil || !whole || !bytes.Equal(orig.Value, event("dry", late)) || string(orig.Key) != "k" {
		t.Fatalf("opened %q key %q whole %v: %v", orig.Value, orig.Key, whole, err)
	}
	if _, err := consumer.Letter(ctx, p.Kafka, p.dlq, infos[0].Partition, infos[0].Offset+1); !errors.Is(err, consumer.ErrNoLetter) {
		t.Fatalf("a letter past the end: %v, want ErrNoLetter", err)
	}

	redrive := func(dry bool, want consumer.RedriveSummary) {
		t.Helper()
		opts := consumer.RedriveOptions{DLQTopic: p.dlq, RequestsTopic: p.requests, DryRun: dry}
		sum, err := consumer.Redrive(ctx, p.Kafka, opts, w, consumer.NewRedrives(p.Pool), p.Codec, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil || sum != want {
			t.Fatalf("redrive (dry run %v): %+v, %v; want %+v", dry, sum, err, want)
		}
	}
	redrive(true, consumer.RedriveSummary{Read: 1, Redriven: 1})
	redrive(true, consumer.RedriveSummary{Read: 1, Redriven: 1}) // recorded nothing
	redrive(false, consumer.RedriveSummary{Read: 1, Redriven: 1})
	redrive(true, consumer.RedriveSummary{Read: 1, Before: 1})
}

// An operator purges one of two dead letters (a dry run first, which records
// nothing): the redrive sends only the other, and the purged event never becomes
// an order.
func TestPurgedLettersAreNeverRedriven(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	w := p.writer("")
	defer w.Close()
	late := stacktest.Name("late")
	p.produce(t, kafka.Message{Key: []byte("a"), Value: event("keep", late)}, kafka.Message{Key: []byte("b"), Value: event("drop", late)})
	_, stop := p.runConsumer(t)
	p.deadLetters(t, 2)
	stop()
	done := consumer.NewRedrives(p.Pool)
	purge := func(dry bool, want consumer.PurgeSummary) {
		t.Helper()
		opts := consumer.PurgeOptions{DLQTopic: p.dlq, Kinds: kindNames(), By: "ana", DryRun: dry,
			Select: []consumer.Selector{{Tenant: late, Kind: order.Kind, EventID: "drop"}}}
		if sum, err := consumer.Purge(ctx, p.Kafka, opts, done, p.Codec); err != nil || sum != want {
			t.Fatalf("purge (dry run %v): %+v, %v; want %+v", dry, sum, err, want)
		}
	}
	purge(true, consumer.PurgeSummary{Read: 2, Purged: 1, Unselected: 1})
	purge(false, consumer.PurgeSummary{Read: 2, Purged: 1, Unselected: 1})
	purge(false, consumer.PurgeSummary{Read: 2, Before: 1, Unselected: 1})

	if _, err := apikeys.New(p.Pool, apikeys.DefaultCacheTTL).Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	opts := consumer.RedriveOptions{DLQTopic: p.dlq, RequestsTopic: p.requests}
	sum, err := consumer.Redrive(ctx, p.Kafka, opts, w, done, p.Codec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || sum != (consumer.RedriveSummary{Read: 2, Redriven: 1, Before: 1}) {
		t.Fatalf("redrive after the purge: %+v, %v", sum, err)
	}
	_, stop = p.runConsumer(t)
	defer stop()
	kept := order.WorkflowID(late, order.FromEvent, "keep")
	stacktest.Eventually(t, 30*time.Second, "the kept letter's workflow", func() bool { return stacktest.Runs(t, p.Temporal, kept) == 1 })
	if n := stacktest.Runs(t, p.Temporal, order.WorkflowID(late, order.FromEvent, "drop")); n != 0 {
		t.Fatalf("the purged letter's event started %d runs", n)
	}
}

// kindNames tells orders and refund requests apart in dead letters.
func kindNames() consumer.KindNames {
	return consumer.NamesOf(orders.New(nil, nil), refunds.New(nil, nil, intake.Starter{}))
}

// Two tenants' letters share the eventId e-1: tenant A's poison order (and A's
// CloudEvent of id e-1) and tenant B's bad refund request. Purging A's order
// discards it alone, says so, and leaves B's letter redrivable; the CloudEvent
// is selected by its source too.
func TestPurgeSelectsByTenantAndKind(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	a, b := stacktest.Name("tenant-a"), stacktest.Name("tenant-b")
	refund := []byte(fmt.Sprintf(`{"eventId":"e-1","tenant":%q,"refund":{"order_id":"ord_x","amount":-1}}`, b))
	ce := []byte(fmt.Sprintf(`{"specversion":"1.0","id":"e-1","source":"shop","type":%q,"tenant":%q,"data":%s}`, orders.RequestedType, a, orderJSON))
	p.produce(t, kafka.Message{Key: []byte("a"), Value: event("e-1", a)}, kafka.Message{Key: []byte("b"), Value: refund},
		kafka.Message{Key: []byte("c"), Value: ce, Headers: []kafka.Header{{Key: "content-type", Value: []byte("application/cloudevents+json")}}})
	_, stop := p.runConsumer(t)
	p.deadLetters(t, 3)
	stop()
	done := consumer.NewRedrives(p.Pool)
	purge := func(dry bool, sel consumer.Selector, want consumer.PurgeSummary) []consumer.Identity {
		t.Helper()
		var gone []consumer.Identity
		opts := consumer.PurgeOptions{DLQTopic: p.dlq, Kinds: kindNames(), By: "ana", DryRun: dry, Select: []consumer.Selector{sel},
			Discarded: func(id consumer.Identity) { gone = append(gone, id) }}
		if sum, err := consumer.Purge(ctx, p.Kafka, opts, done, p.Codec); err != nil || sum != want || len(gone) != want.Purged {
			t.Fatalf("purge %+v (dry run %v): %+v, %v, discarding %v; want %+v", sel, dry, sum, err, gone, want)
		}
		return gone
	}
	orderA := consumer.Selector{Tenant: a, Kind: order.Kind, EventID: "e-1"}
	gone := purge(true, orderA, consumer.PurgeSummary{Read: 3, Purged: 1, Unselected: 2})
	if g := gone[0]; g.Tenant != a || g.Kind != "order" || g.EventID != "e-1" || g.Source != "" || len(g.ID) != 64 {
		t.Fatalf("the dry run would discard %+v", g)
	}
	purge(false, orderA, consumer.PurgeSummary{Read: 3, Purged: 1, Unselected: 2})
	purge(false, orderA, consumer.PurgeSummary{Read: 3, Before: 1, Unselected: 2})
	cloud := consumer.Selector{Tenant: a, Kind: "order", EventID: "e-1", Source: "shop"}
	if g := purge(true, cloud, consumer.PurgeSummary{Read: 3, Purged: 1, Unselected: 2}); g[0].Source != "shop" {
		t.Fatalf("the CloudEvent's purge would discard %+v", g)
	}
	purge(true, consumer.Selector{ID: gone[0].ID}, consumer.PurgeSummary{Read: 3, Before: 1, Unselected: 2})

	w := p.writer("")
	defer w.Close()
	opts := consumer.RedriveOptions{DLQTopic: p.dlq, RequestsTopic: p.requests, Kinds: kindNames(),
		Select: []consumer.Selector{{Tenant: b, Kind: "refund", EventID: "e-1"}}}
	sum, err := consumer.Redrive(ctx, p.Kafka, opts, w, done, p.Codec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || sum != (consumer.RedriveSummary{Read: 3, Redriven: 1, Unselected: 2}) {
		t.Fatalf("redrive of tenant B's refund request: %+v, %v", sum, err)
	}
	opts.Select, opts.DryRun = nil, true
	sum, err = consumer.Redrive(ctx, p.Kafka, opts, w, done, p.Codec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || sum != (consumer.RedriveSummary{Read: 3, Redriven: 1, Before: 2}) {
		t.Fatalf("after A's purge and B's redrive, a redrive of all would do %+v, %v; want only A's CloudEvent", sum, err)
	}
}
