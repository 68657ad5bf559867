package consumer

import (
	"context"
	"errors"
	"sync"

	"github.com/segmentio/kafka-go"
)

// A partition's events over their tenant's budget wait in its room while their
// tenant's part of it has space. The rest are parked: their handlers end, the window keeps their offsets
// only (not committed past), and a refetch reads them again from the topic, one
// by one as their tenants' budgets allow. The other tenants' events behind them
// go on meanwhile, instead of waiting behind a window full of one tenant's.

// errParked ends a handler whose event waits for its tenant's budget outside
// the window.
var errParked = errors.New("over its tenant's budget: parked")

// room bounds, per tenant, the handlers of one partition that wait for their
// tenants' budgets: a tenant over its budget fills its own part, and the other
// tenants' events still wait in theirs (most of them not at all).
type room struct {
	mu      sync.Mutex
	waiting map[string]int
	each    int
}

func newRoom(each int) *room { return &room{waiting: map[string]int{}, each: max(each, 1)} }

// enter takes a place in tenant's part of the room, or reports that it is full.
func (r *room) enter(tenant string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting[tenant] >= r.each {
		return false
	}
	r.waiting[tenant]++
	return true
}

func (r *room) leave(tenant string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting[tenant]--; r.waiting[tenant] <= 0 {
		delete(r.waiting, tenant) // tenants come and go: the map holds those waiting
	}
}

// parkedEvent is a parked message: where it is, and whose budget it waits for.
type parkedEvent struct {
	offset int64
	tenant string
}

// refetched is a parked message read again (gone: deleted before it was).
type refetched struct {
	offset int64
	m      kafka.Message
	gone   bool
}

// startRefetch reads want again in the background; the channel returned closes
// when it ends (all handed over, or ctx ended).
func (p *partition) startRefetch(ctx context.Context, want []parkedEvent) chan struct{} {
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		p.refetch(ctx, want)
	}()
	return ended
}

// refetch hands each parked message to the partition again, in offset order,
// once its tenant's budget allows one more: the request is spent here, so its
// handler runs without waiting again. It reads with a reader of its own, kept
// for the partition's next refetches, so the fetch of new messages goes on.
func (p *partition) refetch(ctx context.Context, want []parkedEvent) {
	if p.rereader == nil {
		p.rereader, p.rereadAt = p.c.readers(p.id), -1
	}
	reader, next := p.rereader, &p.rereadAt
	for _, ev := range want {
		if err := p.c.opts.Budget.Wait(ctx, ev.tenant); err != nil {
			return // ctx ended: the rest stay parked for the next owner
		}
		f, ok := p.reread(ctx, reader, next, ev.offset)
		if !ok {
			return
		}
		if !f.gone {
			select {
			case p.c.slots <- struct{}{}: // as fetch: released when it settles
			case <-ctx.Done():
				return
			}
		}
		select {
		case p.refetched <- f:
		case <-ctx.Done():
			if !f.gone {
				<-p.c.slots
			}
			return
		}
	}
}

// reread reads the message at offset, from the reader at *next. A message
// retention deleted since it was parked (or a topic recreated) comes back gone,
// counted as lost: the window must not wait for it for ever.
func (p *partition) reread(ctx context.Context, reader PartitionReader, next *int64, offset int64) (refetched, bool) {
	if *next != offset {
		if err := reader.SetOffset(offset); err != nil {
			p.c.logger.Error("partition reader: set offset", "partition", p.id, "offset", offset, "err", err)
			return refetched{}, false
		}
		*next = offset
	}
	backoff := newBackoff()
	for {
		fetchCtx, cancel := context.WithTimeout(ctx, idleAfter)
		m, err := reader.FetchMessage(fetchCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return refetched{}, false
		case err == nil && m.Offset < offset:
			continue
		case err == nil:
			*next = m.Offset + 1
			if m.Offset > offset {
				return p.lostParked(offset), true
			}
			return refetched{offset: offset, m: m}, true
		case errors.Is(err, context.DeadlineExceeded):
			if first, end, berr := reader.Bounds(ctx); berr == nil && (offset < first || offset >= end) {
				*next = -1
				return p.lostParked(offset), true
			}
		default:
			p.c.logger.Warn("kafka refetch failed", "partition", p.id, "offset", offset, "err", err)
			if !backoff.wait(ctx) {
				return refetched{}, false
			}
		}
	}
}

// lostParked counts a parked message that is no longer in the partition.
func (p *partition) lostParked(offset int64) refetched {
	p.c.m.lost.Inc()
	p.c.logger.Error("a parked event was deleted before it was read again (retention): it never becomes an order", "partition", p.id, "offset", offset)
	return refetched{offset: offset, gone: true}
}
