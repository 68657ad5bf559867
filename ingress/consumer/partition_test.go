package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestWindowCommitsOnlyContiguousSettledMessages(t *testing.T) {
	w := &window{}
	for off := int64(10); off < 15; off++ {
		w.add(off)
	}
	mark := func() int64 {
		if !w.marked {
			return -1
		}
		return w.watermark
	}
	// Settled out of order: nothing passes the oldest unsettled message.
	w.settle(result{offset: 12, outcome: done})
	w.settle(result{offset: 11, outcome: done})
	if mark() != -1 || len(w.queue) != 5 {
		t.Fatalf("after 12 and 11 settled: watermark %d, queue %d; want none, 5", mark(), len(w.queue))
	}
	w.settle(result{offset: 10, outcome: done})
	if mark() != 12 || len(w.queue) != 2 {
		t.Fatalf("after 10 settled: watermark %d, queue %d; want 12, 2", mark(), len(w.queue))
	}
	w.settle(result{offset: 14, outcome: done})
	if mark() != 12 {
		t.Fatalf("14 settled before 13: watermark %d, want 12", mark())
	}
	w.settle(result{offset: 13, outcome: done})
	if mark() != 14 || len(w.queue) != 0 || w.inflight != 0 {
		t.Fatalf("all settled: watermark %d, queue %d, in flight %d; want 14, 0, 0", mark(), len(w.queue), w.inflight)
	}
}

func TestWindowNeverCommitsPastAGiveUp(t *testing.T) {
	w := &window{}
	for off := int64(0); off < 4; off++ {
		w.add(off)
	}
	w.settle(result{offset: 1, outcome: abandoned}) // abandoned: the next owner handles it
	for _, off := range []int64{3, 2, 0} {
		w.settle(result{offset: off, outcome: done})
	}
	if !w.marked || w.watermark != 0 || len(w.queue) != 3 || w.inflight != 0 {
		t.Fatalf("watermark %v (%d), queue %d, in flight %d; want offset 0, 3, 0", w.marked, w.watermark, len(w.queue), w.inflight)
	}
}

func TestWindowIsFullAtTheCapBehindItsOldestUnsettled(t *testing.T) {
	const max = 3
	w := &window{}
	for off := int64(0); off < max; off++ {
		if w.full(max) {
			t.Fatalf("full with %d messages, cap %d", off, max)
		}
		w.add(off)
	}
	if !w.full(max) {
		t.Fatal("not full at the cap")
	}
	// Settling a later message frees nothing: the oldest still holds the window.
	w.settle(result{offset: 2, outcome: done})
	if !w.full(max) {
		t.Fatal("a settled message behind the oldest unsettled one freed the window")
	}
	w.settle(result{offset: 0, outcome: done})
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
	finished := make(chan struct{})
	room := newRoom(2)
	for range 2 {
		c.slots <- struct{}{} // each handler holds one, as fetch gives it
		go func() {
			a := attempts{room: room, tenant: "flood"}
			if err := c.spend(context.Background(), &a); err != nil {
				t.Error(err)
			}
			if err := c.spend(context.Background(), &a); err != nil { // a retry gives nothing back again
				t.Error(err)
			}
			c.releaseSlot()
			finished <- struct{}{}
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
		case <-finished:
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

// A parked message holds the commit but not the window: behind it the window
// tracks trackedPerHeld times as many offsets, bodies still bounded; refetched,
// it runs again, and once settled the watermark passes it.
func TestWindowTracksPastAParkedMessage(t *testing.T) {
	const max = 4
	w := &window{}
	w.add(0)
	w.settle(result{offset: 0, outcome: parkedOut, tenant: "flood"})
	for off := int64(1); off < 2*max; off++ {
		if w.full(max) {
			t.Fatalf("full at offset %d behind a parked message", off)
		}
		w.add(off)
		w.settle(result{offset: off, outcome: done})
	}
	if w.marked {
		t.Fatalf("watermark %d passed the parked message", w.watermark)
	}
	for off := int64(2 * max); off < 3*max; off++ {
		w.add(off) // running, not settled: bodies held
	}
	if !w.full(max) {
		t.Fatalf("not full with %d bodies in flight, cap %d", w.inflight, max)
	}
	want := w.toRefetch()
	if len(want) != 1 || want[0] != (parkedEvent{offset: 0, tenant: "flood"}) || len(w.toRefetch()) != 0 {
		t.Fatalf("to refetch %v, then more; want offset 0 of flood once", want)
	}
	w.unrefetch() // that refetch ended without handing it over
	if again := w.toRefetch(); len(again) != 1 || again[0].offset != 0 {
		t.Fatalf("after a refetch that handed nothing over: to refetch %v, want offset 0 again", again)
	}
	w.refetched(0, false)
	w.settle(result{offset: 0, outcome: done})
	if !w.marked || w.watermark != 2*max-1 || w.parked != 0 {
		t.Fatalf("after the parked message settled: watermark %v %d, parked %d; want %d, 0", w.marked, w.watermark, w.parked, 2*max-1)
	}
}

// A parked message retention deleted before it was read again is settled as
// lost, so the window does not wait for it for ever.
func TestWindowSettlesAParkedMessageGone(t *testing.T) {
	w := &window{}
	w.add(5)
	w.add(6)
	w.settle(result{offset: 5, outcome: parkedOut, tenant: "flood"})
	w.settle(result{offset: 6, outcome: done})
	w.toRefetch()
	w.refetched(5, true)
	if !w.marked || w.watermark != 6 || len(w.queue) != 0 || w.parked != 0 {
		t.Fatalf("watermark %v %d, queue %d, parked %d; want 6, 0, 0", w.marked, w.watermark, len(w.queue), w.parked)
	}
}

// Each tenant has its own part of the room: one over its budget fills its own,
// not the others'.
func TestRoomIsPartedByTenant(t *testing.T) {
	r := newRoom(2)
	for i, want := range []bool{true, true, false} {
		if got := r.enter("flood"); got != want {
			t.Fatalf("the flood's place %d: entered %v, want %v (its part holds 2)", i+1, got, want)
		}
	}
	if !r.enter("other") {
		t.Fatal("the flood's full part kept another tenant out")
	}
	r.leave("flood")
	if !r.enter("flood") {
		t.Fatal("a place left was not given again")
	}
	r.leave("other")
	if _, ok := r.waiting["other"]; ok {
		t.Fatal("a tenant no longer waiting is still held in the room")
	}
}
