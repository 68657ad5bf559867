package consumer

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// partition handles one assigned partition for one generation: a reader fetches
// from the assigned offset; messages are handled concurrently within the member's
// InFlight slots;
// the contiguous watermark of settled messages is committed through the generation,
// never past a message that is not settled. It holds at most MaxUncommitted messages
// behind its oldest unsettled one (64 times as many behind a parked one, whose
// body it drops: parked.go); when full, it stops fetching.
type partition struct {
	c     *Consumer
	gen   *kafka.Generation
	id    int
	held  prometheus.Gauge
	lag   prometheus.Gauge
	stale bool // a commit was refused: the generation is over for us
	// committed is the offset committed last (the assignment's at first): what an
	// idle reader's position must pass to be worth committing.
	committed int64
	results   chan result     // from handlers
	work      context.Context // handlers' context: cancelled only to abandon them
	abandon   context.CancelFunc
	// stopFetching ends the fetch and any refetch.
	stopFetching context.CancelFunc
	w            *window
	room         *room          // handlers waiting for their tenant's budget
	refetched    chan refetched // from the refetch running, each holding a slot
	pass         chan struct{}  // closed when the refetch running ends; nil: none runs
	// rereader reads parked messages again, at rereadAt next (-1: unknown);
	// only a refetch uses it, one at a time.
	rereader PartitionReader
	rereadAt int64
}

// outcome is what a handler did with its message.
type outcome uint8

const (
	abandoned outcome = iota // not settled: the next owner handles it
	done                     // settled: started, duplicate, or dead-lettered
	parkedOut                // over its tenant's budget: read again when it allows
)

type result struct {
	offset  int64
	outcome outcome
	tenant  string // parkedOut: whose budget
}

// runPartition runs until the generation ends (a rebalance: in-flight work gets
// RevokeBound to settle, then is abandoned uncommitted to the next owner) or drain
// closes (a stop: in-flight work finishes, within DrainTimeout). Either way it
// commits what settled, if the generation still takes commits, and returns.
func (c *Consumer) runPartition(genCtx context.Context, drain <-chan struct{}, gen *kafka.Generation, a kafka.PartitionAssignment) {
	label := strconv.Itoa(a.ID)
	work, abandon := context.WithCancel(context.Background())
	defer abandon()
	p := &partition{c: c, gen: gen, id: a.ID, held: c.m.uncommitted.WithLabelValues(label), lag: c.m.lag.WithLabelValues(label),
		results: make(chan result), work: work, abandon: abandon, w: &window{},
		room: newRoom(c.opts.MaxUncommitted / 4), refetched: make(chan refetched)}
	defer p.held.Set(0)
	for _, position := range []string{"beyond_end", "before_start"} {
		c.m.outOfRange.WithLabelValues(label, position) // at 0 from the start, so increase() sees the first
	}

	reader := c.readers(a.ID)
	defer reader.Close()
	offset := a.Offset
	if offset < 0 {
		offset = kafka.FirstOffset // nothing committed yet
	} else {
		offset = p.inRange(genCtx, reader, offset)
	}
	if err := reader.SetOffset(offset); err != nil {
		c.logger.Error("partition reader: set offset", "partition", a.ID, "offset", offset, "err", err)
		return
	}
	fetchCtx, stopFetching := context.WithCancel(genCtx)
	defer stopFetching()
	p.stopFetching = stopFetching
	in := make(chan kafka.Message) // each message on it holds a slot
	idle := make(chan int64)       // the reader's position, when it had nothing to hand over
	go p.fetch(fetchCtx, reader, in, idle)
	p.committed = a.Offset
	p.loop(fetchCtx, drain, in, idle)
	if p.rereader != nil { // no refetch runs after loop
		p.rereader.Close()
	}
}

// loop takes fetched and refetched messages while the window has room, settles
// handlers' results and commits, until drain closes or ctx (the generation's
// fetching) ends.
func (p *partition) loop(ctx context.Context, drain <-chan struct{}, in <-chan kafka.Message, idle <-chan int64) {
	w := p.w
	tick := time.NewTicker(p.c.opts.CommitInterval)
	defer tick.Stop()
	for {
		p.held.Set(float64(len(w.queue) + len(in)))
		if p.pass == nil && w.parked > 0 {
			if want := w.toRefetch(); len(want) > 0 {
				p.pass = p.startRefetch(ctx, want)
			}
		}
		take := in
		if w.full(p.c.opts.MaxUncommitted) {
			take = nil // the fetcher blocks, so this partition stops fetching
		}
		select {
		case m := <-take:
			w.add(m.Offset)
			p.handle(m, p.room)
		case r := <-p.results:
			w.settle(r)
		case f := <-p.refetched:
			w.refetched(f.offset, f.gone)
			if !f.gone {
				p.handle(f.m, nil) // its budget is spent
			}
		case <-p.pass:
			p.pass = nil
			w.unrefetch() // what it did not hand over (a reader's error) waits for the next
		case <-tick.C:
			p.commitThrough()
		case pos := <-idle:
			// Everything read was handed over: with nothing unsettled, the
			// partition commits through what the reader passed over too
			// (transaction markers, aborted records), so lag reaches 0.
			p.commitThrough()
			if len(w.queue) == 0 && w.inflight == 0 && pos > 0 && pos > p.committed {
				p.commitAt(pos)
			}
		case <-drain:
			p.finish(p.c.opts.DrainTimeout)
			return
		case <-ctx.Done():
			p.finish(p.c.opts.RevokeBound)
			return
		}
	}
}

// finish stops fetching and refetching, waits for in-flight handlers until the
// deadline, then abandons the rest, and commits what settled.
func (p *partition) finish(within time.Duration) {
	p.stopFetching()
	deadline := time.After(within)
	for p.w.inflight > 0 || p.pass != nil {
		select {
		case r := <-p.results:
			p.w.settle(r)
		case f := <-p.refetched:
			if !f.gone {
				<-p.c.slots // not run: it stays parked for the next owner
			}
		case <-p.pass:
			p.pass = nil
		case <-deadline:
			p.abandon() // handlers give up what they have not settled
			deadline = nil
		}
	}
	p.commitThrough()
}

// window is a partition's messages in offset order, from the oldest unsettled one:
// what may be committed is the contiguous run of settled messages before it. It
// keeps offsets only: a message's body lives with its handler.
type window struct {
	queue    []*slot
	inflight int // handlers running: the bodies the partition holds
	parked   int // parked messages in the queue, a refetch's included
	// watermark is the last contiguous settled offset, not yet committed when
	// marked.
	watermark int64
	marked    bool
}

type slotState uint8

const (
	running    slotState = iota // handed to a handler (or abandoned by one)
	settled                     // may be committed
	parked                      // over its tenant's budget: waits to be read again
	refetching                  // parked, and in a refetch
)

type slot struct {
	offset int64
	state  slotState
	tenant string // parked: whose budget it waits for
}

// trackedPerHeld is how many offsets a window tracks behind a parked message per
// body it may hold: parked messages cost an offset, not a body, so the other
// tenants' events behind them go on.
const trackedPerHeld = 64

// add takes the message at offset, in offset order, as in flight.
func (w *window) add(offset int64) {
	w.queue = append(w.queue, &slot{offset: offset})
	w.inflight++
}

// full reports whether the partition must stop taking messages: max bodies in
// flight, or max messages behind its oldest unsettled one. Behind a parked
// message, trackedPerHeld times as many: a message still running bounds what a
// new owner reads again after a crash as before, a parked one waits on a
// tenant's budget and must not hold the others' events.
func (w *window) full(max int) bool {
	limit := max
	if w.parked > 0 {
		limit = max * trackedPerHeld
	}
	return w.inflight >= max || len(w.queue) >= limit
}

// find returns the slot at offset, or nil.
func (w *window) find(offset int64) *slot {
	i, ok := slices.BinarySearchFunc(w.queue, offset, func(s *slot, o int64) int { return cmp.Compare(s.offset, o) })
	if !ok {
		return nil
	}
	return w.queue[i]
}

// settle records a handler's result and moves the watermark over settled messages.
func (w *window) settle(r result) {
	w.inflight--
	s := w.find(r.offset)
	switch {
	case s == nil || r.outcome == abandoned:
		return // stays in the queue: nothing after it is committed
	case r.outcome == parkedOut:
		s.state, s.tenant = parked, r.tenant
		w.parked++
		return
	}
	s.state = settled
	w.advance()
}

// advance moves the watermark over the settled messages at the queue's head.
func (w *window) advance() {
	for len(w.queue) > 0 && w.queue[0].state == settled {
		w.watermark, w.marked = w.queue[0].offset, true
		w.queue[0] = nil
		w.queue = w.queue[1:]
	}
}

// toRefetch hands the parked messages not yet in a refetch to one, in offset order.
func (w *window) toRefetch() []parkedEvent {
	var out []parkedEvent
	for _, s := range w.queue {
		if s.state == parked {
			s.state = refetching
			out = append(out, parkedEvent{offset: s.offset, tenant: s.tenant})
		}
	}
	return out
}

// unrefetch parks again what a refetch that ended did not hand over.
func (w *window) unrefetch() {
	for _, s := range w.queue {
		if s.state == refetching {
			s.state = parked
		}
	}
}

// refetched runs a parked message again (gone: it was deleted before it was read
// again, and is settled as lost).
func (w *window) refetched(offset int64, gone bool) {
	s := w.find(offset)
	if s == nil || s.state != refetching {
		return
	}
	w.parked--
	if gone {
		s.state = settled
		w.advance()
		return
	}
	s.state, s.tenant = running, ""
	w.inflight++
}

// handle hands m to a handler, which waits for its tenant's budget in room (nil:
// the budget is spent); the result comes back on p.results.
func (p *partition) handle(m kafka.Message, room *room) {
	go func() { // counted in the window's inflight, awaited by finish before runPartition returns
		out, tenant := p.c.process(p.work, m, room)
		p.c.releaseSlot()
		p.results <- result{offset: m.Offset, outcome: out, tenant: tenant}
	}()
}

// commitThrough commits the window's watermark, if it moved since the last commit.
func (p *partition) commitThrough() {
	if p.w.marked && p.commitAt(p.w.watermark+1) {
		p.w.marked = false
	}
}

// inRange applies the policy for an offset outside what the broker holds, and
// raises orderflow_consumer_offset_out_of_range_total; it never skips silently.
// Beyond the end (the topic was recreated, or the offsets came from another
// cluster): the partition is read again from its first offset, since the events
// now there were never read, and those that were are absorbed as duplicates.
// Before the start (retention deleted events the group never read): reading
// resumes at the first offset, and the deleted offsets are counted as lost. An
// offset whose bounds cannot be read is kept: the reader retries it.
func (p *partition) inRange(ctx context.Context, reader PartitionReader, offset int64) int64 {
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	first, end, err := reader.Bounds(bctx)
	switch {
	case err != nil:
		p.c.logger.Warn("partition bounds unknown; keeping the offset", "partition", p.id, "offset", offset, "err", err)
		return offset
	case offset > end:
		p.c.m.outOfRange.WithLabelValues(strconv.Itoa(p.id), "beyond_end").Inc()
		p.c.logger.Error("offset beyond the partition's end: the topic was recreated or its offsets restored from elsewhere; reading it again from its first offset",
			"partition", p.id, "offset", offset, "first", first, "end", end)
		return first
	case offset < first:
		p.c.m.outOfRange.WithLabelValues(strconv.Itoa(p.id), "before_start").Inc()
		p.c.m.lost.Add(float64(first - offset))
		p.c.logger.Error("events deleted by retention before they were read: they never become orders",
			"partition", p.id, "offset", offset, "first", first, "deleted", first-offset)
		return first
	}
	return offset
}

// boundsEvery is how often an idle partition checks that its position is still
// within the partition (a topic recreated under it starts again at 0).
const boundsEvery = 10 * time.Second

// idleAfter is how long a fetch waits for a message before it reports the reader's
// position instead.
const idleAfter = time.Second

// fetch reads the partition into in until ctx ends. When nothing comes for
// idleAfter, it sends the reader's position on idle: every message before it was
// handed over on in already.
func (p *partition) fetch(ctx context.Context, reader PartitionReader, in chan<- kafka.Message, idle chan<- int64) {
	backoff := newBackoff()
	checked := time.Now()
	for {
		fetchCtx, cancel := context.WithTimeout(ctx, idleAfter)
		m, err := reader.FetchMessage(fetchCtx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, context.DeadlineExceeded) {
				if time.Since(checked) >= boundsEvery {
					checked = time.Now()
					if pos := reader.Offset(); pos >= 0 {
						if to := p.inRange(ctx, reader, pos); to != pos {
							if err := reader.SetOffset(to); err != nil {
								p.c.logger.Error("partition reader: set offset", "partition", p.id, "offset", to, "err", err)
							}
							continue
						}
					}
				}
				p.lag.Set(float64(max(reader.Lag(), 0)))
				select {
				case idle <- reader.Offset():
				case <-ctx.Done():
					return
				}
				continue
			}
			p.c.logger.Warn("kafka fetch failed", "partition", p.id, "err", err)
			if !backoff.wait(ctx) {
				return
			}
			continue
		}
		backoff.reset()
		p.c.m.consumed.Inc()
		p.lag.Set(float64(max(m.HighWaterMark-m.Offset-1, 0)))
		select {
		case p.c.slots <- struct{}{}: // a slot, released when the message settles
		case <-ctx.Done():
			return
		}
		select {
		case in <- m:
		case <-ctx.Done():
			<-p.c.slots
			return
		}
	}
}

// commitAt commits next as the partition's offset with the generation's ID and
// member; it reports whether the offset is committed. A commit the broker refuses
// because the group has moved on (a stale generation or member) is counted and not
// tried again.
func (p *partition) commitAt(next int64) bool {
	if p.stale {
		return false
	}
	began := time.Now()
	err := p.gen.CommitOffsets(map[string]map[int]int64{p.c.opts.Topic: {p.id: next}})
	p.c.m.commitSeconds.Observe(time.Since(began).Seconds())
	switch {
	case err == nil:
		p.committed = next
		return true
	case errors.Is(err, kafka.IllegalGeneration), errors.Is(err, kafka.UnknownMemberId), errors.Is(err, kafka.RebalanceInProgress),
		errors.Is(err, kafka.FencedInstanceID):
		p.stale = true
		p.c.m.staleCommits.Inc()
		p.c.logger.Info("offset commit refused: the group moved on", "partition", p.id, "offset", next, "generation", p.gen.ID, "err", err)
	default:
		p.c.logger.Warn("offset commit failed; will retry", "partition", p.id, "offset", next, "err", err)
	}
	return false
}
