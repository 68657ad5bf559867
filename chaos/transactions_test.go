//go:build chaos

package chaos

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// javaProducer compiles testdata/Producer.java against the broker's own
// kafka-clients jar and runs it in one of its modes (see the file) on the rig's
// requests topic; partitions is the topic's (4), or the partition of
// delete-records.
func (r *rig) javaProducer(t *testing.T, mode, partitions string, count int) {
	t.Helper()
	libs := r.Env["ORDERFLOW_KAFKA_LIBS"]
	if libs == "" {
		t.Fatal("the stack's env names no ORDERFLOW_KAFKA_LIBS: run scripts/stack up")
	}
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-d", classes, "-cp", filepath.Join(libs, "*"), "testdata/Producer.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	// A short run: the client compiler and the serial collector spend less CPU.
	cmd := exec.Command("java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classes+string(os.PathListSeparator)+filepath.Join(libs, "*"), "Producer",
		mode, r.Env["ORDERFLOW_KAFKA_PLAINTEXT"], r.requests, partitions, r.tenant, strconv.Itoa(count), orderJSON)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the %s producer: %v\n%s", mode, err, out)
	}
}

// atEnd waits for the group's committed offsets to reach each partition's end;
// an empty partition has nothing to commit. Past the last order, the partition
// commits through trailing markers when its reader goes idle, on a busy machine
// some seconds later.
func (r *rig) atEnd(t *testing.T) {
	t.Helper()
	stacktest.Eventually(t, 3*time.Minute, "the group's offsets to reach each partition's end", func() bool {
		committed := r.offsets(t)
		for p := range 4 {
			end, err := kafkaclient.EndOffset(context.Background(), r.Kafka, r.requests, p)
			if c, ok := committed[p]; err != nil || c != end && !(end == 0 && (!ok || c < 0)) {
				return false
			}
		}
		return true
	})
}

// A producer on Kafka's own client writes 100 events in transactions it commits
// and 100 in transactions it aborts, interleaved on the same partitions: exactly
// the 100 committed become orders, no transaction marker is dead-lettered, and the
// group's committed offsets reach the end of every partition (markers included).
func TestChaosAbortedTransactionsNeverBecomeOrders(t *testing.T) {
	t.Parallel()
	const n = 100
	r := newRig(t)
	r.startWorker(t, nil)
	r.javaProducer(t, "transactions", "4", n)
	for i := range n {
		r.expect(order.WorkflowID(r.tenant, order.FromEvent, "committed-"+strconv.Itoa(i)))
	}
	r.ledger(t, "kafka: 100 committed, 100 aborted transactions")
	if got := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, r.tenant); got != n {
		t.Fatalf("%d orders, want the %d committed events' alone", got, n)
	}
	if end := stacktest.EndOffset(t, r.dlq, 0); end != 0 {
		t.Fatalf("%d dead letters: transaction markers reached the consumer", end)
	}
	r.atEnd(t)
}

// A producer on Kafka's own client is killed inside a transaction (it halts
// without committing or aborting) after writing one event to partition 0; then
// committed events follow on the same partition. Read committed, the partition
// waits for the broker to resolve the transaction: it aborts it when the
// producer's transaction.timeout.ms (5 s) runs out. The open event never becomes
// an order; those after it do, within seconds of the abort.
func TestChaosOpenTransactionHoldsItsPartitionUntilTheBrokerAbortsIt(t *testing.T) {
	t.Parallel()
	const n = 10
	r := newRig(t)
	r.startWorker(t, nil)
	r.javaProducer(t, "open", "4", 1)
	began := time.Now()
	w := r.writer()
	w.Balancer = kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })
	defer w.Close()
	for i := range n {
		r.produce(t, w, "after-"+strconv.Itoa(i), nil)
	}
	r.ledger(t, "kafka: a transaction left open, 10 events after it")
	t.Logf("the events after the open transaction were paid %s after it", time.Since(began).Round(100*time.Millisecond))
	if got := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, r.tenant); got != n {
		t.Fatalf("%d orders, want the %d committed events' alone", got, n)
	}
	if end := stacktest.EndOffset(t, r.dlq, 0); end != 0 {
		t.Fatalf("%d dead letters", end)
	}
	r.atEnd(t)
}

// A producer on Kafka's own client sends CloudEvents in binary mode (ce_*
// headers) and structured mode (application/cloudevents+json): each becomes an
// order; the same source and id again is the same order; the same id from
// another source is another; a CloudEvent whose data is not an order is
// dead-lettered with its identity.
func TestChaosCloudEventsBecomeOrdersOnce(t *testing.T) {
	t.Parallel()
	const n = 10
	r := newRig(t)
	r.startWorker(t, nil)
	r.javaProducer(t, "cloudevents", "4", n)
	ce := func(source, id string) string {
		return order.WorkflowID(r.tenant, order.FromCloudEvent, order.CloudEventKey(source, id))
	}
	for i := range n {
		r.expect(ce("/shop/checkout", "bin-"+strconv.Itoa(i)))
		r.expect(ce("/shop/checkout", "st-"+strconv.Itoa(i)))
	}
	r.expect(ce("/shop/returns", "bin-0"))
	r.ledger(t, "kafka: CloudEvents, binary and structured")
	if got := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, r.tenant); got != 2*n+1 {
		t.Fatalf("%d orders, want %d", got, 2*n+1)
	}
	letters := stacktest.Messages(t, r.dlq, 2)
	ids := map[string]string{}
	for _, m := range letters {
		if id := stacktest.Header(m, "ce_id"); id != "" {
			ids[id] = stacktest.Header(m, "ce_source")
		}
		if id := stacktest.Header(m, "dlq.ce_id"); id != "" {
			ids[id] = stacktest.Header(m, "dlq.ce_source")
		}
	}
	if ids["bad-bin"] != "/shop/checkout" || ids["bad-st"] != "/shop/checkout" {
		t.Fatalf("dead letters name %v: want bad-bin and bad-st of /shop/checkout", ids)
	}
	r.atEnd(t)
}

// The group's offsets stop matching the topic, as they do when an operator
// recreates the topic or restores offsets from another cluster (partition 0's
// committed offset is moved past its end), or when retention deletes events the
// group never read (partition 1's first two). Before, kafka-go waited at the
// offset beyond the end for good and skipped the deleted ones without a word.
// Now partition 0 is read again from its first offset (what was read before is
// absorbed as duplicates) and partition 1 resumes at its first offset, each
// counted by orderflow_consumer_offset_out_of_range_total, with the deleted
// offsets counted as lost.
func TestChaosOffsetsOutOfRangeAreNeverSkippedSilently(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	onto := func(p int) *kafka.Writer {
		w := r.writer()
		w.Balancer = kafka.BalancerFunc(func(kafka.Message, ...int) int { return p })
		t.Cleanup(func() { w.Close() })
		return w
	}
	p0, p1 := onto(0), onto(1)
	worker := r.startWorker(t, nil)
	for i := range 3 {
		r.produce(t, p0, "before-"+strconv.Itoa(i), nil)
	}
	stacktest.Eventually(t, 30*time.Second, "partition 0 to be committed", func() bool { return r.offsets(t)[0] == 3 })
	worker.Signal(syscall.SIGTERM)
	worker.Wait(t, time.Minute)

	// While no member runs: partition 0's offset goes past its end; partition 1
	// gets three events, the first two of which retention deletes unread.
	cl := r.Kafka.Client()
	resp, err := cl.OffsetCommit(context.Background(), &kafka.OffsetCommitRequest{GroupID: r.group, GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{r.requests: {{Partition: 0, Offset: 1000}, {Partition: 1, Offset: 0}}}})
	if err == nil {
		for _, p := range resp.Topics[r.requests] {
			err = errors.Join(err, p.Error)
		}
	}
	if err != nil {
		t.Fatalf("reset the group's offsets: %v", err)
	}
	for i := range 3 {
		r.produce(t, p0, "after-"+strconv.Itoa(i), nil)
	}
	for i := range 3 {
		r.produce(t, p1, "retained-"+strconv.Itoa(i), nil)
	}
	r.javaProducer(t, "delete-records", "1", 2)
	r.mu.Lock()
	r.keys = slices.DeleteFunc(r.keys, func(k string) bool { return strings.Contains(k, "retained-0") || strings.Contains(k, "retained-1") })
	r.mu.Unlock()

	r.startWorker(t, nil)
	r.ledger(t, "kafka: offsets beyond the end and before the start")
	metrics := string(httpGet(t, "http://"+r.opsAddr+"/metrics"))
	for _, m := range []struct {
		name string
		want float64
	}{
		{`orderflow_consumer_offset_out_of_range_total{partition="0",position="beyond_end"}`, 1},
		{`orderflow_consumer_offset_out_of_range_total{partition="1",position="before_start"}`, 1},
		{`orderflow_consumer_offsets_deleted_unread_total`, 2},
	} {
		if got := stacktest.Metric(t, metrics, m.name); got != m.want {
			t.Errorf("%s = %v, want %v", m.name, got, m.want)
		}
	}
	if got := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, r.tenant); got != 7 {
		t.Fatalf("%d orders, want 7: 3 before, 3 after, the 1 event retention kept", got)
	}
	r.atEnd(t)
}

func httpGet(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return b
}
