package consumer

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// partition handles one partition's messages, up to InFlightPerPartition at once,
// and commits the contiguous watermark: never past a message that is not settled.
// (kafka-go's own commit keeps the highest offset it is given, so the ordering is
// ours to keep.)
type partition struct {
	c      *Consumer
	last   int64 // highest offset handed in; only the fetch loop uses it
	in     chan kafka.Message
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	final  atomic.Bool // commit the watermark on the way out
	held   prometheus.Gauge
}

func (c *Consumer) newPartition(parent context.Context, id int) *partition {
	ctx, cancel := context.WithCancel(parent)
	// The buffer lets the fetch loop run ahead of a busy partition instead of
	// stalling every other partition behind it. Buffered messages are not settled,
	// so they are never committed.
	p := &partition{c: c, in: make(chan kafka.Message, 4*c.opts.InFlightPerPartition), done: make(chan struct{}), ctx: ctx, cancel: cancel,
		held: c.m.uncommitted.WithLabelValues(strconv.Itoa(id))}
	p.final.Store(true)
	return p
}

// stop ends the partition; final says whether to commit what was settled (not
// after a rebalance: the partition may be someone else's now).
func (p *partition) stop(final bool) {
	p.final.Store(final)
	p.cancel()
}

type slot struct {
	m       kafka.Message
	settled bool
}

type result struct {
	offset  int64
	settled bool
}

func (p *partition) run() {
	defer close(p.done)
	defer p.cancel()
	var queue []*slot // in offset order
	results := make(chan result)
	inflight := 0
	var watermark *kafka.Message // last contiguous settled message, not yet committed

	advance := func(r result) {
		inflight--
		if !r.settled {
			return // stays in the queue: nothing after it is committed
		}
		for _, s := range queue {
			if s.m.Offset == r.offset {
				s.settled = true
			}
		}
		for len(queue) > 0 && queue[0].settled {
			watermark = &queue[0].m
			queue = queue[1:]
		}
	}
	commit := func() {
		if watermark == nil {
			return
		}
		if p.c.commit(p.ctx, *watermark) == nil {
			watermark = nil
		}
	}

	tick := time.NewTicker(p.c.opts.CommitInterval)
	defer tick.Stop()
	for {
		p.held.Set(float64(len(queue) + len(p.in)))
		in := p.in
		if inflight >= p.c.opts.InFlightPerPartition || len(queue) >= p.c.opts.MaxUncommitted {
			in = nil // window full: stop taking messages (backpressure on the fetch loop)
		}
		select {
		case m := <-in:
			queue = append(queue, &slot{m: m})
			inflight++
			go func() { // counted in inflight, awaited below before run returns
				results <- result{offset: m.Offset, settled: p.c.process(p.ctx, m)}
			}()
		case r := <-results:
			advance(r)
		case <-tick.C:
			commit()
		case <-p.ctx.Done():
			// Handlers see the cancelled context and give up what they have not
			// settled; those messages are handed back (not committed).
			for inflight > 0 {
				advance(<-results)
			}
			if p.final.Load() {
				commit()
			}
			return
		}
	}
}

// commit commits through m. The handled message is committed even while the
// consumer stops, so the commit runs detached from ctx, with its own timeout.
func (c *Consumer) commit(ctx context.Context, m kafka.Message) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	began := time.Now()
	err := c.reader.CommitMessages(cctx, m)
	c.m.commitSeconds.Observe(time.Since(began).Seconds())
	if err != nil {
		c.logger.Warn("offset commit failed; will retry", "partition", m.Partition, "offset", m.Offset, "err", err)
	}
	return err
}
