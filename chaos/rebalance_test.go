//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// member starts one more worker process in the rig's consumer group.
func (r *rig) member(t *testing.T) *stacktest.Proc {
	t.Helper()
	ops := stacktest.FreeAddr(t)
	p := stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), r.workerEnv(map[string]string{"OPS_ADDR": ops}))
	waitHTTP(t, "http://"+ops+"/healthz")
	return p
}

// offsets returns the group's committed offset per partition, of those the
// broker answered without an error (none when it answered with one): the
// sampler below reads them from a goroutine of its own, which cannot stop
// the row.
func (r *rig) offsets(t *testing.T) map[int]int64 {
	cl := r.Kafka.Client()
	resp, err := cl.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: r.group, Topics: map[string][]int{r.requests: {0, 1, 2, 3}}})
	out := map[int]int64{}
	if err != nil || resp.Error != nil {
		return out
	}
	for _, p := range resp.Topics[r.requests] {
		if p.Error == nil { // an error reads as -1, which is no offset
			out[p.Partition] = p.CommittedOffset
		}
	}
	return out
}

// Members join and leave the group under load, one is killed with SIGKILL in the
// middle of a rebalance: a partition revoked from a member never commits after it
// (the broker refuses a stale generation's commit), so no committed offset ever
// moves backwards; and every event is exactly one order, workflow and charge. The
// first member reaches Temporal over a slow link, so its starts are still in flight
// when its partitions move: a member that went on committing them after the move
// would put an offset behind what the new owner already committed.
func TestChaosRebalanceFencing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, map[string]string{"TEMPORAL_ADDRESS": slowLink(t, r.WorkerEnv()["TEMPORAL_ADDRESS"], 1500*time.Millisecond)})
	stop := make(chan struct{})
	var backwards []string
	var samples int
	var mu sync.Mutex
	var sampler sync.WaitGroup
	sampler.Go(func() {
		last := map[int]int64{}
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			cur := r.offsets(t)
			mu.Lock()
			samples++
			for p, off := range cur {
				if off < 0 && last[p] == 0 {
					continue // nothing committed yet
				}
				if off < last[p] {
					backwards = append(backwards, fmt.Sprintf("partition %d: %d -> %d", p, last[p], off))
				}
				last[p] = max(last[p], off)
			}
			mu.Unlock()
		}
	})

	produced := make(chan struct{})
	go func() {
		defer close(produced)
		w := r.writer()
		defer w.Close()
		for i := range 600 {
			id := fmt.Sprintf("rebalance-%d", i)
			r.produce(t, w, id, []byte(id))
			time.Sleep(15 * time.Millisecond)
		}
	}()
	time.Sleep(2 * time.Second)
	second := r.member(t) // join
	time.Sleep(2 * time.Second)
	third := r.member(t) // join
	time.Sleep(2 * time.Second)
	second.Signal(syscall.SIGTERM) // leave cleanly
	second.Wait(t, 30*time.Second)
	r.member(t) // a fourth joins...
	time.Sleep(300 * time.Millisecond)
	third.Kill(t) // ...and the third dies mid-rebalance
	<-produced
	r.ledger(t, "members join, leave, SIGKILL mid-rebalance")
	close(stop)
	sampler.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d offset samples, %d moved backwards", samples, len(backwards))
	if len(backwards) > 0 {
		t.Fatalf("committed offsets moved backwards: %v", backwards)
	}
}

// An operator grows orders.requested from 4 to 8 partitions while the service
// runs (as docs/api.md advises for lag): the group sees the new partitions within
// seconds, without a restart or an unrelated rebalance, and every event on them is
// an order (the time it took is logged: seconds on a quiet machine; beside
// CI's lanes over 30 s, so the row waits two minutes).
func TestChaosPartitionsAddedAreConsumed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	w := r.writer()
	for i := range 8 {
		r.produce(t, w, fmt.Sprintf("before-%d", i), []byte(fmt.Sprintf("k-before-%d", i)))
	}
	_ = w.Close()
	resp, err := r.Kafka.Client().CreatePartitions(context.Background(), &kafka.CreatePartitionsRequest{
		Topics: []kafka.TopicPartitionsConfig{{Name: r.requests, Count: 8}}})
	if err != nil || resp.Errors[r.requests] != nil {
		t.Fatalf("grow %s to 8 partitions: %v %v", r.requests, err, resp)
	}
	stacktest.Eventually(t, 15*time.Second, "the new partitions to have leaders", func() bool {
		_, err := kafkaclient.EndOffset(context.Background(), r.Kafka, r.requests, 7)
		return err == nil
	})
	// Every new partition gets events: explicit partitions, as a producer whose
	// keys hash there would.
	grown := &kafka.Writer{Addr: kafka.TCP(r.Kafka.Brokers...), Topic: r.requests, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: r.Kafka.Transport(), Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int {
			return int(m.Key[0]-'0') % 8
		})}
	defer grown.Close()
	produced := time.Now()
	for i := range 32 {
		r.produce(t, grown, fmt.Sprintf("after-%d", i), []byte(fmt.Sprintf("%d-after", i%8)))
	}
	n := 8 + 32
	stacktest.Eventually(t, 2*time.Minute, "every event on the grown topic to be an order", func() bool {
		return r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, r.tenant) == n
	})
	t.Logf("%d events over 8 partitions were orders %s after the last was produced", n, time.Since(produced).Round(time.Millisecond))
	r.ledger(t, "partitions 4 -> 8 while running")
}
