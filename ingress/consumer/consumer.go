package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/tracing"
)

// Group is a kafka-go consumer group (*kafka.ConsumerGroup): each generation
// assigns partitions to members and fences commits by generation and member.
type Group interface {
	Next(ctx context.Context) (*kafka.Generation, error)
	Close() error
}

// PartitionReader reads one partition from an offset (*kafka.Reader without a group).
type PartitionReader interface {
	SetOffset(offset int64) error
	FetchMessage(ctx context.Context) (kafka.Message, error)
	// Offset is the next offset the reader reads, past the records it hid
	// (transaction markers, aborted records); Lag how far that is from the end.
	Offset() int64
	Lag() int64
	// Bounds are the partition's first offset still retained and its end.
	Bounds(ctx context.Context) (first, end int64, err error)
	Close() error
}

// Writer writes dead letters.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Intake starts the workflows events ask for (*intake.Events), of the kinds it
// knows.
type Intake interface {
	Kinds() []ingress.Kind
	SubmitEvent(ctx context.Context, k ingress.Kind, tenant, eventID string, req ingress.Request) intake.Result
	SubmitCloudEvent(ctx context.Context, k ingress.Kind, tenant, source, id string, req ingress.Request) intake.Result
}

// Tenants tells which tenants exist (*apikeys.Tenants): an event's tenant field is
// a trust boundary.
type Tenants interface {
	Exists(ctx context.Context, tenant string) (bool, error)
}

var (
	_ Group           = (*kafka.ConsumerGroup)(nil)
	_ PartitionReader = (*kafkaclient.PartitionReader)(nil)
	_ Writer          = (*kafka.Writer)(nil)
	_ Intake          = (*intake.Events)(nil)
)

// Options tune the consumer.
type Options struct {
	// Topic is the requests topic the group consumes.
	Topic string
	// Group is the consumer group (the dedup scope in processed_events is given to
	// the intake service with the same name).
	Group string
	// InFlight bounds the messages this member handles at once, over all its
	// partitions: a busy partition may use what an idle one leaves.
	InFlight int
	// CommitInterval is how often each partition commits its watermark: one commit
	// covers every message acknowledged since the last one.
	CommitInterval time.Duration
	// MaxUncommitted bounds what a partition holds behind its oldest unsettled
	// message: when full, the partition takes no more and fetching pauses, so a
	// head message that never settles cannot grow memory without bound.
	MaxUncommitted int
	// RevokeBound is how long a partition lost in a rebalance lets its in-flight
	// starts settle (to commit them) before it abandons them to the next owner.
	RevokeBound time.Duration
	// DrainTimeout bounds how long in-flight starts may take to finish on a stop.
	DrainTimeout time.Duration
	// Budget holds each tenant's events to its request budget (nil: none): an
	// event over it waits, never dropped or dead-lettered, and gives its in-flight
	// slot to the other tenants' events meanwhile.
	Budget Budget
	// Customers seals the dead letter of an event naming a customer under the
	// customer's data key too, so erasing the customer erases it (nil: the
	// deployment's keys alone).
	Customers *Customers
}

// Budget is each tenant's request budget (*quota.Limiter).
type Budget interface {
	Wait(ctx context.Context, tenant string) error
}

// Consumer is the Kafka ingress.
type Consumer struct {
	opts    Options
	group   Group
	readers func(partition int) PartitionReader
	dlq     Writer
	seal    Sealer // dead letters' values
	intake  Intake
	decoder *Decoder
	tenants Tenants
	logger  *slog.Logger
	m       *Metrics
	t       *tracing.Tracing

	failing atomic.Int64  // handlers currently retrying a transient failure
	slots   chan struct{} // one per message in flight, over all partitions
	// unslotted counts handlers that run on after waiting for their tenant's
	// budget without a slot (none was free): the next handlers to finish keep
	// theirs for them.
	unslotted atomic.Int64
}

// New returns a consumer; Run drives it.
// readers opens a reader of one partition of the requests topic.
// t (nil for none) continues each event's trace from its message headers.
func New(opts Options, group Group, readers func(partition int) PartitionReader, dlq Writer, seal Sealer, in Intake, tenants Tenants, logger *slog.Logger, m *Metrics, t *tracing.Tracing) *Consumer {
	if opts.InFlight <= 0 {
		opts.InFlight = 16
	}
	if opts.CommitInterval <= 0 {
		opts.CommitInterval = 200 * time.Millisecond
	}
	if opts.MaxUncommitted < opts.InFlight {
		opts.MaxUncommitted = 8 * opts.InFlight
	}
	if opts.RevokeBound <= 0 {
		opts.RevokeBound = 3 * time.Second
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Second
	}
	return &Consumer{opts: opts, group: group, readers: readers, dlq: dlq, seal: seal, intake: in, decoder: NewDecoder(in.Kinds()...), tenants: tenants, logger: logger, m: m, t: t,
		slots: make(chan struct{}, opts.InFlight)}
}

// Ready reports whether the consumer makes progress: it is not while a handler is
// retrying a transient failure (Temporal or Postgres down).
func (c *Consumer) Ready(context.Context) error {
	if n := c.failing.Load(); n > 0 {
		return fmt.Errorf("%d message(s) waiting on a transient failure", n)
	}
	return nil
}

// Run consumes until ctx ends. For each generation of the group it runs one
// goroutine per assigned partition (gen.Start), which commits through the
// generation, so a member the group moved on from has its commits refused by the
// broker. When ctx ends (SIGTERM) every partition stops fetching, lets its in-flight
// starts finish (within DrainTimeout), commits, and exits; then the group is left
// at once rather than after a session timeout.
func (c *Consumer) Run(ctx context.Context) error {
	defer c.group.Close()
	var parts sync.WaitGroup
	defer parts.Wait() // before Close: commits go through the live generation
	drain := ctx.Done()
	backoff := newBackoff()
	for {
		gen, err := c.group.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				return nil // stopping: not an error
			}
			c.logger.Warn("consumer group: no generation", "err", err)
			if !backoff.wait(ctx) {
				return nil
			}
			continue
		}
		backoff.reset()
		assigned := gen.Assignments[c.opts.Topic]
		c.m.rebalances.Inc()
		c.m.generation.Set(float64(gen.ID))
		c.m.owned.Set(float64(len(assigned)))
		c.logger.Info("consumer group generation", "generation", gen.ID, "member", gen.MemberID, "partitions", len(assigned))
		for _, a := range assigned {
			parts.Add(1)
			gen.Start(func(genCtx context.Context) {
				defer parts.Done()
				c.runPartition(genCtx, drain, gen, a)
			})
		}
	}
}

// attempts is what a message's handler carries from one attempt to the next.
type attempts struct {
	room      *room  // where it waits for its tenant's budget; nil: spent already
	unslotted bool   // its slot was given back while it waited (spend)
	sent      bool   // an attempt's start went out without an answer
	tenant    string // the event's, once decoded
}

// handle turns one message into at most one workflow start. A nil error means the
// message is settled (started, duplicate, or dead-lettered) and may be committed;
// errParked, that it waits for its tenant's budget outside the window.
func (c *Consumer) handle(ctx context.Context, m kafka.Message, a *attempts) error {
	ev, err := c.decoder.Decode(m)
	if err == nil {
		a.tenant = ev.Tenant
		var known bool
		if known, err = c.tenants.Exists(ctx, ev.Tenant); err != nil {
			return err
		}
		if !known {
			err = &ingress.FieldError{Field: "tenant", Message: "unknown tenant " + strconv.Quote(ev.Tenant)}
		}
	}
	if err != nil {
		return c.deadLetter(ctx, m, err)
	}
	if err := c.spend(ctx, a); err != nil {
		return err
	}
	var out intake.Result
	if ce := ev.CloudEvent; ce != nil {
		out = c.intake.SubmitCloudEvent(ctx, ev.Kind, ev.Tenant, ce.Source, ce.ID, ev.Request)
	} else {
		out = c.intake.SubmitEvent(ctx, ev.Kind, ev.Tenant, ev.EventID, ev.Request)
	}
	switch out.Kind {
	case intake.Created:
		c.m.starts.Inc()
		c.m.startSeconds.Observe(out.StartTook.Seconds())
	case intake.Replayed:
		if a.sent {
			// An earlier attempt's start went out and its answer was lost (a
			// timeout on a busy server): it is what started it, no redelivery.
			c.m.starts.Inc()
			break
		}
		c.m.duplicates.Inc()
	case intake.Mismatch:
		return c.deadLetter(ctx, m, fmt.Errorf("%s was used with a different %s", ev, ev.Kind.Name()))
	case intake.Unavailable:
		a.sent = true
		return out.Err
	default: // never settle what was not placed
		return fmt.Errorf("%s: unexpected intake outcome %d", ev, out.Kind)
	}
	return nil
}

// spend waits for the tenant's budget to allow one more event, in the tenant's
// part of the partition's room, with this handler's slot given back, so the
// events waiting for a budget hold no slot. With the room full it parks the event instead
// (errParked), unless an earlier attempt's start went out: that one waits, so
// its answer is counted as its own. After the wait it takes a slot again if one
// is free, and goes on without one if not: waiting for a slot here could wait on
// fetchers that hold slots until their partition's window moves. The next
// handler to finish keeps its slot for it instead (releaseSlot), so the slots
// still count the handlers running.
func (c *Consumer) spend(ctx context.Context, a *attempts) error {
	if c.opts.Budget == nil || a.room == nil {
		return nil
	}
	if !a.sent {
		if !a.room.enter(a.tenant) {
			return errParked
		}
		defer a.room.leave(a.tenant)
	}
	if !a.unslotted { // once per message, whatever its attempts
		a.unslotted = true
		<-c.slots
		defer c.retakeSlot()
	}
	began := time.Now()
	err := c.opts.Budget.Wait(ctx, a.tenant)
	if time.Since(began) > time.Millisecond {
		c.m.budgetWaits.Inc()
	}
	if err != nil {
		return fmt.Errorf("tenant %s over its budget: %w", a.tenant, err)
	}
	return nil
}

// retakeSlot takes a slot for a handler that waited without one, or leaves it
// owed (unslotted).
func (c *Consumer) retakeSlot() {
	select {
	case c.slots <- struct{}{}:
	default:
		c.unslotted.Add(1)
	}
}

// releaseSlot gives a finished handler's slot back, unless a handler that runs
// on without one (retakeSlot) is owed it.
func (c *Consumer) releaseSlot() {
	for {
		n := c.unslotted.Load()
		if n == 0 {
			<-c.slots
			return
		}
		if c.unslotted.CompareAndSwap(n, n-1) {
			return
		}
	}
}

// process retries handle with capped backoff until it settles the message, parks
// it (with the tenant whose budget it waits for), or ctx ends; it never skips a
// message. room is where it waits for its tenant's budget (nil: spent already).
func (c *Consumer) process(ctx context.Context, m kafka.Message, room *room) (outcome, string) {
	if c.t != nil { // one span over every attempt, in the producer's trace
		var span trace.Span
		ctx, span = c.t.Tracer().Start(c.t.Extract(ctx, m.Headers), "consume "+m.Topic, trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(attribute.String("messaging.system", "kafka"), attribute.Int("messaging.destination.partition.id", m.Partition),
				attribute.Int64("messaging.kafka.offset", m.Offset)))
		defer span.End()
	}
	backoff := newBackoff()
	counted := false
	defer func() {
		if counted {
			c.failing.Add(-1)
		}
	}()
	a := attempts{room: room}
	for attempt := 1; ; attempt++ {
		began := time.Now()
		err := c.handle(ctx, m, &a)
		if err == nil {
			if attempt == 1 {
				c.m.eventSeconds.Observe(time.Since(began).Seconds())
			}
			return done, ""
		}
		if errors.Is(err, errParked) {
			c.m.parked.Inc()
			return parkedOut, a.tenant
		}
		if ctx.Err() != nil {
			return abandoned, ""
		}
		if !counted {
			counted = true
			c.failing.Add(1)
		}
		c.logger.WarnContext(ctx, "message not settled; retrying", "partition", m.Partition, "offset", m.Offset, "attempt", attempt, "err", err)
		if !backoff.wait(ctx) {
			return abandoned, ""
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
