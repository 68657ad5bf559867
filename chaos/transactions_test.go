//go:build chaos

package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/platform/kafkaclient"
	"github.com/orderflow/orderflow/internal/stacktest"
)

// javaProducer compiles testdata/TxnProducer.java against the broker's own
// kafka-clients jar and runs it: count events in committed transactions, count in
// aborted ones, interleaved on the same partitions.
func (r *rig) javaProducer(t *testing.T, count int) {
	t.Helper()
	libs := r.Env["ORDERFLOW_KAFKA_LIBS"]
	if libs == "" {
		t.Fatal("the stack's env names no ORDERFLOW_KAFKA_LIBS: run scripts/stack up")
	}
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-d", classes, "-cp", filepath.Join(libs, "*"), "testdata/TxnProducer.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	cmd := exec.Command("java", "-cp", classes+string(os.PathListSeparator)+filepath.Join(libs, "*"), "TxnProducer",
		r.Env["ORDERFLOW_KAFKA_PLAINTEXT"], r.requests, "4", r.tenant, strconv.Itoa(count), orderJSON)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the transactional producer: %v\n%s", err, out)
	}
}

// A producer on Kafka's own client writes 100 events in transactions it commits
// and 100 in transactions it aborts, interleaved on the same partitions: exactly
// the 100 committed become orders, no transaction marker is dead-lettered, and the
// group's committed offsets reach the end of every partition (markers included).
func TestChaosAbortedTransactionsNeverBecomeOrders(t *testing.T) {
	const n = 100
	r := newRig(t)
	r.startWorker(t, nil)
	r.javaProducer(t, n)
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
	stacktest.Eventually(t, 30*time.Second, "the group's offsets to reach each partition's end", func() bool {
		committed := r.offsets(t)
		for p := range 4 {
			end, err := kafkaclient.EndOffset(context.Background(), r.Kafka, r.requests, p)
			if err != nil || committed[p] != end {
				return false
			}
		}
		return true
	})
}
