package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

func TestWindowCommitsOnlyContiguousSettledMessages(t *testing.T) {
	w := &window{}
	for off := int64(10); off < 15; off++ {
		w.add(kafka.Message{Offset: off})
	}
	mark := func() int64 {
		if w.watermark == nil {
			return -1
		}
		return w.watermark.Offset
	}
	// Settled out of order: nothing passes the oldest unsettled message.
	w.settle(result{offset: 12, settled: true})
	w.settle(result{offset: 11, settled: true})
	if mark() != -1 || len(w.queue) != 5 {
		t.Fatalf("after 12 and 11 settled: watermark %d, queue %d; want none, 5", mark(), len(w.queue))
	}
	w.settle(result{offset: 10, settled: true})
	if mark() != 12 || len(w.queue) != 2 {
		t.Fatalf("after 10 settled: watermark %d, queue %d; want 12, 2", mark(), len(w.queue))
	}
	w.settle(result{offset: 14, settled: true})
	if mark() != 12 {
		t.Fatalf("14 settled before 13: watermark %d, want 12", mark())
	}
	w.settle(result{offset: 13, settled: true})
	if mark() != 14 || len(w.queue) != 0 || w.inflight != 0 {
		t.Fatalf("all settled: watermark %d, queue %d, in flight %d; want 14, 0, 0", mark(), len(w.queue), w.inflight)
	}
}

func TestWindowNeverCommitsPastAGiveUp(t *testing.T) {
	w := &window{}
	for off := int64(0); off < 4; off++ {
		w.add(kafka.Message{Offset: off})
	}
	w.settle(result{offset: 1, settled: false}) // abandoned: the next owner handles it
	for _, off := range []int64{3, 2, 0} {
		w.settle(result{offset: off, settled: true})
	}
	if w.watermark == nil || w.watermark.Offset != 0 || len(w.queue) != 3 || w.inflight != 0 {
		t.Fatalf("watermark %v, queue %d, in flight %d; want offset 0, 3, 0", w.watermark, len(w.queue), w.inflight)
	}
}

func TestWindowIsFullAtTheCapBehindItsOldestUnsettled(t *testing.T) {
	const max = 3
	w := &window{}
	for off := int64(0); off < max; off++ {
		if w.full(max) {
			t.Fatalf("full with %d messages, cap %d", off, max)
		}
		w.add(kafka.Message{Offset: off})
	}
	if !w.full(max) {
		t.Fatal("not full at the cap")
	}
	// Settling a later message frees nothing: the oldest still holds the window.
	w.settle(result{offset: 2, settled: true})
	if !w.full(max) {
		t.Fatal("a settled message behind the oldest unsettled one freed the window")
	}
	w.settle(result{offset: 0, settled: true})
	if w.full(max) || len(w.queue) != 2 {
		t.Fatalf("after the oldest settled: full %v, queue %d; want false, 2", w.full(max), len(w.queue))
	}
}

type blockingBudget struct{ release chan struct{} }

func (b blockingBudget) Wait(ctx context.Context, _ string) error {
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Handlers that wait for their tenant's budget give their slots back, fetchers
// take every slot, and the handlers still finish: none waits for a slot again,
// and the slots count the handlers running throughout.
func TestBudgetWaitsNeverDeadlockOnSlots(t *testing.T) {
	budget := blockingBudget{release: make(chan struct{})}
	c := &Consumer{opts: Options{Budget: budget}, slots: make(chan struct{}, 2), m: NewMetrics(prometheus.NewRegistry())}
	done := make(chan struct{})
	for range 2 {
		c.slots <- struct{}{} // each handler holds one, as fetch gives it
		go func() {
			unslotted := false
			if err := c.spend(context.Background(), "flood", &unslotted); err != nil {
				t.Error(err)
			}
			if err := c.spend(context.Background(), "flood", &unslotted); err != nil { // a retry gives nothing back again
				t.Error(err)
			}
			c.releaseSlot()
			done <- struct{}{}
		}()
	}
	// Two fetchers take the slots given back, and hold them.
	for range 2 {
		select {
		case c.slots <- struct{}{}:
		case <-time.After(5 * time.Second):
			t.Fatal("the waiting handlers did not give their slots back")
		}
	}
	close(budget.release)
	for range 2 {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a handler waits for a slot the fetchers hold")
		}
	}
	if len(c.slots) != 2 || c.unslotted.Load() != 0 {
		t.Fatalf("%d slots held, %d owed: want the fetchers' 2, none owed", len(c.slots), c.unslotted.Load())
	}
	c.releaseSlot()
	c.releaseSlot()
	if len(c.slots) != 0 {
		t.Fatalf("%d slots held after every handler finished", len(c.slots))
	}
}
