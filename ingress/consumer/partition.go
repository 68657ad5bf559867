package consumer

import (
	"context"
	"errors"
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
// behind its oldest unsettled one; when full, it stops fetching.
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
}

type slot struct {
	m       kafka.Message
	settled bool
}

type result struct {
	offset  int64
	settled bool
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
		results: make(chan result), work: work}
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
	in := make(chan kafka.Message) // each message on it holds a slot
	idle := make(chan int64)       // the reader's position, when it had nothing to hand over
	go p.fetch(fetchCtx, reader, in, idle)
	p.committed = a.Offset

	w := &window{}
	// finish stops fetching, waits for in-flight handlers until the deadline, then
	// abandons the rest, and commits what settled.
	finish := func(within time.Duration) {
		stopFetching()
		deadline := time.After(within)
		for w.inflight > 0 {
			select {
			case r := <-p.results:
				w.settle(r)
			case <-deadline:
				abandon() // handlers give up what they have not settled
				deadline = nil
			}
		}
		p.commitThrough(w)
	}
	tick := time.NewTicker(c.opts.CommitInterval)
	defer tick.Stop()
	for {
		p.held.Set(float64(len(w.queue) + len(in)))
		take := in
		if w.full(c.opts.MaxUncommitted) {
			take = nil // the fetcher blocks, so this partition stops fetching
		}
		select {
		case m := <-take:
			w.add(m)
			p.handle(m)
		case r := <-p.results:
			w.settle(r)
		case <-tick.C:
			p.commitThrough(w)
		case pos := <-idle:
			// Everything read was handed over: with nothing unsettled, the
			// partition commits through what the reader passed over too
			// (transaction markers, aborted records), so lag reaches 0.
			p.commitThrough(w)
			if len(w.queue) == 0 && w.inflight == 0 && pos > 0 && pos > p.committed {
				p.commitAt(pos)
			}
		case <-drain:
			finish(c.opts.DrainTimeout)
			return
		case <-genCtx.Done():
			finish(c.opts.RevokeBound)
			return
		}
	}
}

// window is a partition's messages in offset order, from the oldest unsettled one:
// what may be committed is the contiguous run of settled messages before it.
type window struct {
	queue     []*slot
	inflight  int
	watermark *kafka.Message // last contiguous settled message, not yet committed
}

// add takes m, in offset order, as in flight.
func (w *window) add(m kafka.Message) {
	w.queue = append(w.queue, &slot{m: m})
	w.inflight++
}

// full reports whether the window holds max messages behind its oldest unsettled one.
func (w *window) full(max int) bool { return len(w.queue) >= max }

// settle records a handler's result and moves the watermark over settled messages.
func (w *window) settle(r result) {
	w.inflight--
	if !r.settled {
		return // stays in the queue: nothing after it is committed
	}
	for _, s := range w.queue {
		if s.m.Offset == r.offset {
			s.settled = true
		}
	}
	for len(w.queue) > 0 && w.queue[0].settled {
		w.watermark = &w.queue[0].m
		w.queue = w.queue[1:]
	}
}

// handle hands m to a handler; the result comes back on p.results.
func (p *partition) handle(m kafka.Message) {
	go func() { // counted in the window's inflight, awaited by finish before runPartition returns
		settled := p.c.process(p.work, m)
		p.c.releaseSlot()
		p.results <- result{offset: m.Offset, settled: settled}
	}()
}

// commitThrough commits the window's watermark, if it moved since the last commit.
func (p *partition) commitThrough(w *window) {
	if w.watermark != nil && p.commit(*w.watermark) {
		w.watermark = nil
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

// commit commits through m with the generation's ID and member; it reports whether
// the offset is committed. A commit the broker refuses because the group has moved
// on (a stale generation or member) is counted and not tried again.
func (p *partition) commit(m kafka.Message) bool { return p.commitAt(m.Offset + 1) }

// commitAt commits next as the partition's offset, as commit does.
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
