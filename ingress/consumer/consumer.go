package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/intake"
)

// Reader is the part of *kafka.Reader (in a consumer group, without CommitInterval)
// that the consumer uses.
type Reader interface {
	FetchMessage(ctx context.Context) (kafka.Message, error)
	CommitMessages(ctx context.Context, msgs ...kafka.Message) error
	Stats() kafka.ReaderStats
}

// Writer writes dead letters.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Intake places orders; the consumer's events use intake.FromEvent.
type Intake interface {
	Place(ctx context.Context, tenant string, src intake.Source, key string, req intake.Request, wait time.Duration) intake.Outcome
}

var (
	_ Reader = (*kafka.Reader)(nil)
	_ Writer = (*kafka.Writer)(nil)
	_ Intake = (*intake.Service)(nil)
)

// Options tune the consumer.
type Options struct {
	// Group is the consumer group (the dedup scope in processed_events is given to
	// the intake service with the same name).
	Group string
	// InFlightPerPartition bounds concurrent handling within one partition.
	InFlightPerPartition int
	// CommitInterval is how often each partition commits its watermark: one commit
	// covers every message acknowledged since the last one.
	CommitInterval time.Duration
	// MaxUncommitted bounds what a partition holds behind its oldest unsettled
	// message: when full, the partition takes no more and fetching pauses, so a
	// head message that never settles cannot grow memory without bound.
	MaxUncommitted int
}

// Consumer is the Kafka ingress.
type Consumer struct {
	opts   Options
	reader Reader
	dlq    Writer
	intake Intake
	store  *Store
	logger *slog.Logger
	m      *Metrics

	failing atomic.Int64 // handlers currently retrying a transient failure
}

// New returns a consumer; Run drives it.
func New(opts Options, reader Reader, dlq Writer, in Intake, store *Store, logger *slog.Logger, m *Metrics) *Consumer {
	if opts.InFlightPerPartition <= 0 {
		opts.InFlightPerPartition = 16
	}
	if opts.CommitInterval <= 0 {
		opts.CommitInterval = 200 * time.Millisecond
	}
	if opts.MaxUncommitted < opts.InFlightPerPartition {
		opts.MaxUncommitted = 8 * opts.InFlightPerPartition
	}
	return &Consumer{opts: opts, reader: reader, dlq: dlq, intake: in, store: store, logger: logger, m: m}
}

// Ready reports whether the consumer makes progress: it is not while a handler is
// retrying a transient failure (Temporal or Postgres down).
func (c *Consumer) Ready(context.Context) error {
	if n := c.failing.Load(); n > 0 {
		return fmt.Errorf("%d message(s) waiting on a transient failure", n)
	}
	return nil
}

// Run consumes until ctx ends or the reader is closed. On return every partition
// has committed what it settled and every goroutine it started has ended.
func (c *Consumer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	parts := map[int]*partition{}
	defer func() {
		for _, p := range parts {
			p.stop(true)
		}
		wg.Wait()
	}()

	backoff := newBackoff()
	for {
		m, err := c.reader.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil // shutting down: not an error
			}
			c.logger.Warn("kafka fetch failed", "err", err)
			if !backoff.wait(ctx) {
				return nil
			}
			continue
		}
		backoff.reset()
		c.m.consumed.Inc()
		c.m.lag.WithLabelValues(strconv.Itoa(m.Partition)).Set(float64(max(m.HighWaterMark-m.Offset-1, 0)))

		p := parts[m.Partition]
		if p != nil && m.Offset <= p.last {
			// The partition went back to its committed offset: a new consumer-group
			// generation (kafka-go does not say so otherwise). Work fetched before it
			// is neither committed nor handled further; it is being delivered again.
			c.logger.Info("partition restarted from its committed offset; dropping work of the old generation",
				"partition", m.Partition, "offset", m.Offset, "fetched_up_to", p.last)
			p.stop(false)
			<-p.done
			p = nil
		}
		if p == nil {
			p = c.newPartition(ctx, m.Partition)
			parts[m.Partition] = p
			wg.Add(1) // registered before the goroutine starts
			go func() {
				defer wg.Done()
				p.run()
			}()
		}
		p.last = m.Offset
		select {
		case p.in <- m:
		case <-ctx.Done():
			return nil
		}
	}
}

// handle turns one message into at most one workflow start. A nil error means the
// message is settled (started, duplicate, or dead-lettered) and may be committed.
func (c *Consumer) handle(ctx context.Context, m kafka.Message) error {
	ev, err := DecodeEvent(m.Value)
	if err == nil {
		var known bool
		if known, err = c.store.TenantExists(ctx, ev.Tenant); err != nil {
			return err
		}
		if !known {
			err = &intake.FieldError{Field: "tenant", Message: "unknown tenant " + strconv.Quote(ev.Tenant)}
		}
	}
	if err != nil {
		return c.deadLetter(ctx, m, err)
	}
	out := c.intake.Place(ctx, ev.Tenant, intake.FromEvent, ev.EventID, ev.Order, 0)
	switch out.Kind {
	case intake.Created:
		c.m.starts.Inc()
	case intake.Replayed:
		c.m.duplicates.Inc()
	case intake.Mismatch:
		return c.deadLetter(ctx, m, fmt.Errorf("eventId %q was used with a different order", ev.EventID))
	case intake.Unavailable:
		return out.Err
	default: // never settle what was not placed
		return fmt.Errorf("event %s: unexpected intake outcome %d", ev.EventID, out.Kind)
	}
	return nil
}

// process retries handle with capped backoff until it settles the message or ctx
// ends; it never skips a message.
func (c *Consumer) process(ctx context.Context, m kafka.Message) bool {
	backoff := newBackoff()
	counted := false
	defer func() {
		if counted {
			c.failing.Add(-1)
		}
	}()
	for attempt := 1; ; attempt++ {
		err := c.handle(ctx, m)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if !counted {
			counted = true
			c.failing.Add(1)
		}
		c.logger.Warn("message not settled; retrying", "partition", m.Partition, "offset", m.Offset, "attempt", attempt, "err", err)
		if !backoff.wait(ctx) {
			return false
		}
	}
}

type backoff struct{ next time.Duration }

func newBackoff() *backoff { return &backoff{next: 100 * time.Millisecond} }

func (b *backoff) reset() { b.next = 100 * time.Millisecond }

// wait sleeps the current delay (doubling up to 10 s); false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.next)
	defer t.Stop()
	b.next = min(b.next*2, 10*time.Second)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
