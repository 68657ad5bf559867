package consumer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/personal"
	"github.com/orderflow/orderflow/platform/redact"
)

// Headers added to a dead letter.
const (
	HeaderTopic     = "dlq.original.topic"
	HeaderPartition = "dlq.original.partition"
	HeaderOffset    = "dlq.original.offset"
	HeaderError     = "dlq.error"
	HeaderGroup     = "dlq.consumer.group"
	HeaderFailedAt  = "dlq.failed.at"
	// HeaderValueBytes and HeaderValueSHA256 describe a value too large to keep
	// whole: its length and digest. The dead letter then holds the value's start.
	HeaderValueBytes  = "dlq.value.bytes"
	HeaderValueSHA256 = "dlq.value.sha256"
	// HeaderSealed marks a value encrypted with the payload keys (it may hold a
	// card token and a customer ID); a redrive opens it.
	HeaderSealed = "dlq.value.sealed"
	// HeaderPersonal marks a value sealed, inside the payload keys' layer, under
	// its customer's data key, and names the key's tenant: readers open it with
	// the customer keys (Reveal); once the customer is erased, nothing does. The
	// letter's key and headers that named the customer are sealed so too, and
	// whom it speaks for is in its dlq.ce_* headers.
	HeaderPersonal = "dlq.value.personal"
)

// Sealer encrypts what a dead letter keeps of a value, and opens it again: the
// payload codec, under PAYLOAD_KEYS.
type Sealer interface {
	Seal(value []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// sealOverhead is what sealing adds to a value, from above: nonce, tag, the
// payload's metadata, and deflate's framing of an incompressible value.
const sealOverhead = 2 << 10

// Bounds of a dead letter. kafka-go refuses a message over its writer's batch
// (1 MiB) and the broker one over message.max.bytes (1 MiB by default), and either
// refusal repeats forever: a dead letter stays well under both, whatever the
// poison message's size.
const (
	maxDeadLetterBytes = 900 << 10
	maxErrorText       = 1 << 10
)

// deadLetter sends a poison message to the dead-letter topic with where it came
// from and why; once written, the message counts as settled and is committed.
// A letter of an event naming a customer is sealed under the customer's key
// first, and recorded (Options.Customers).
func (c *Consumer) deadLetter(ctx context.Context, m kafka.Message, cause error) error {
	layer, err := c.customerLayer(ctx, m)
	if err == nil && layer != nil {
		err = c.opts.Customers.record(ctx, layer, m)
	}
	if err != nil { // a letter that names its customer is never written in the clear: retried
		return fmt.Errorf("dead-letter partition %d offset %d: %w", m.Partition, m.Offset, err)
	}
	dl, err := sealLetter(m, cause, c.opts.Group, time.Now(), maxDeadLetterBytes, c.seal, layer)
	if err == nil {
		err = c.dlq.WriteMessages(ctx, dl)
	}
	if tooLarge(err) {
		// The broker takes less than the default: keep the provenance and the
		// value's digest only.
		if dl, err = sealLetter(m, cause, c.opts.Group, time.Now(), 0, c.seal, layer); err == nil {
			err = c.dlq.WriteMessages(ctx, dl)
		}
	}
	if err != nil {
		return fmt.Errorf("dead-letter partition %d offset %d: %w", m.Partition, m.Offset, err)
	}
	c.m.deadLettered.Inc()
	c.logger.WarnContext(ctx, "poison message dead-lettered", "partition", m.Partition, "offset", m.Offset,
		"reason", layer.reason(redact.Secrets(cause.Error())))
	return nil
}

// deadLetterOf is the dead letter of m: its key, its value sealed and its headers,
// then the provenance headers, the error text scrubbed of secrets and capped at
// maxErrorText. A dead letter over limit bytes drops the original key and headers
// and keeps as much of the value's start as fits, sealed, with the whole value's
// length and digest in HeaderValueBytes and HeaderValueSHA256.
func deadLetterOf(m kafka.Message, cause error, group string, now time.Time, limit int, seal Sealer) (kafka.Message, error) {
	return sealLetter(m, cause, group, now, limit, seal, nil)
}

// sealLetter is deadLetterOf with the customer layer l (nil: none): the value,
// and the key and headers that name the customer, are sealed under the
// customer's key first, and the error text does not name the customer.
func sealLetter(m kafka.Message, cause error, group string, now time.Time, limit int, seal Sealer, l *customerLayer) (kafka.Message, error) {
	reason := l.reason(redact.Secrets(cause.Error()))
	if len(reason) > maxErrorText {
		reason = truncate(reason, maxErrorText) + "…"
	}
	provenance := []kafka.Header{
		{Key: HeaderTopic, Value: []byte(m.Topic)},
		{Key: HeaderPartition, Value: []byte(strconv.Itoa(m.Partition))},
		{Key: HeaderOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))},
		{Key: HeaderError, Value: []byte(reason)},
		{Key: HeaderGroup, Value: []byte(group)},
		{Key: HeaderFailedAt, Value: []byte(now.UTC().Format(time.RFC3339Nano))},
		{Key: HeaderSealed, Value: []byte("1")},
	}
	provenance = append(provenance, l.headers(structuredProvenance(m))...)
	provenance = append(provenance, l.provenance()...)
	sealed, err := seal.Seal(l.value(m.Value))
	if err != nil {
		return kafka.Message{}, fmt.Errorf("seal dead letter: %w", err)
	}
	dl := kafka.Message{Key: l.text(m.Key, "key"), Value: sealed, Headers: append(l.headers(m.Headers), provenance...)}
	if messageBytes(dl) <= limit {
		return dl, nil
	}
	sum := sha256.Sum256(m.Value)
	dl = kafka.Message{Headers: append(provenance,
		kafka.Header{Key: HeaderValueBytes, Value: []byte(strconv.Itoa(len(m.Value)))},
		kafka.Header{Key: HeaderValueSHA256, Value: []byte(hex.EncodeToString(sum[:]))})}
	room := max(0, limit-messageBytes(dl)-sealOverhead)
	if l != nil { // base64 makes the customer's layer a third larger
		room = max(0, room*3/4-personalOverhead)
	}
	keep := m.Value[:min(len(m.Value), room)]
	if dl.Value, err = seal.Seal(l.value(keep)); err != nil {
		return kafka.Message{}, fmt.Errorf("seal dead letter: %w", err)
	}
	return dl, nil
}

// personalOverhead is what a customer's key adds to a value, from above: the
// pd1 prefix and key ID, the nonce and the tag.
const personalOverhead = 128

// structuredProvenance is, for a CloudEvent in structured mode, its identity
// attributes and tenant as dlq.ce_* headers: the value they sit in is sealed, and
// a letter cut short still says whose it is. A binary-mode
// CloudEvent's ce_* headers are kept as they are.
func structuredProvenance(m kafka.Message) []kafka.Header {
	if !isStructured(m) {
		return nil
	}
	var attrs struct {
		ID     any `json:"id"`
		Source any `json:"source"`
		Type   any `json:"type"`
		Tenant any `json:"tenant"`
	}
	if json.Unmarshal(m.Value, &attrs) != nil {
		return nil
	}
	var hs []kafka.Header
	for _, a := range []struct {
		name string
		v    any
	}{{"id", attrs.ID}, {"source", attrs.Source}, {"type", attrs.Type}, {TenantAttribute, attrs.Tenant}} {
		if s, ok := a.v.(string); ok {
			hs = append(hs, kafka.Header{Key: "dlq.ce_" + a.name, Value: []byte(truncate(s, 1024))})
		}
	}
	return hs
}

// truncate cuts s to at most n bytes of valid UTF-8.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// tooLarge reports a write refused for the message's size, by the writer or the
// broker (inside the WriteErrors of a batch too).
func tooLarge(err error) bool {
	var batch kafka.WriteErrors
	if errors.As(err, &batch) {
		return slices.ContainsFunc(batch, func(e error) bool { return errors.Is(e, kafka.MessageSizeTooLarge) })
	}
	return errors.Is(err, kafka.MessageSizeTooLarge)
}

// messageBytes is what a message weighs on the wire, near enough: its key, value
// and headers, and a few bytes of framing for each.
func messageBytes(m kafka.Message) int {
	n := len(m.Key) + len(m.Value) + 64
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

// RedriveSummary counts what a redrive did with the dead letters it read.
type RedriveSummary struct {
	Read       int
	Redriven   int
	Before     int // redriven by an earlier run: not sent again
	OtherTopic int // from a topic other than the requests topic: refused
	Cut        int // value kept only in part: cannot be rebuilt
	Unselected int // not among the letters asked for
	Erased     int // sealed under the key of a customer since erased: refused
	Locked     int // sealed under a customer's key, and no customer keys to open it: refused
}

func (s RedriveSummary) String() string {
	out := fmt.Sprintf("dead letters read: %d, redriven: %d, redriven before: %d, refused (another topic): %d, value cut: %d, not selected: %d",
		s.Read, s.Redriven, s.Before, s.OtherTopic, s.Cut, s.Unselected)
	if s.Erased > 0 {
		out += fmt.Sprintf(", refused (customer erased): %d", s.Erased)
	}
	if s.Locked > 0 {
		out += fmt.Sprintf(", refused (sealed under a customer's key; no customer keys given): %d", s.Locked)
	}
	return out
}

// RedriveOptions say which dead letters go back where.
type RedriveOptions struct {
	DLQTopic string
	// RequestsTopic is the only topic a dead letter is re-published to: its
	// original-topic header is anyone's who can write the dead-letter topic, so a
	// letter naming another topic is refused.
	RequestsTopic string
	// Select picks the letters (all when empty); Kinds tells a letter's kind.
	Select []Selector
	Kinds  KindNames
	// Progress is how many dead letters between two progress lines.
	Progress int
	// DryRun counts what would be redriven (Redriven), writing and recording
	// nothing.
	DryRun bool
	// Customers open the letters sealed under a customer's key (nil: such
	// letters are refused, counted in Locked).
	Customers Revealer
}

// Redrive re-publishes the dead letters present in the dead-letter topic when it
// starts (all, or those selected) to the requests topic, without the dlq
// headers, each once: a redriven letter is recorded in done after its write, by
// its content and provenance (letterOf), and a later run skips it, even from a
// recreated dead-letter topic. A crash between the write and the record sends it again on
// the next run, which the consumer absorbs as a duplicate eventId. w must not have
// a Topic of its own.
func Redrive(ctx context.Context, cluster kafkaclient.Cluster, opts RedriveOptions, w Writer, done *Redrives, keys Sealer, logger *slog.Logger) (RedriveSummary, error) {
	var sum RedriveSummary
	err := Letters(ctx, cluster, opts.DLQTopic, func(m kafka.Message, last int64) error {
		if err := redriveOne(ctx, m, opts, w, done, keys, &sum); err != nil {
			return err
		}
		if opts.Progress > 0 && sum.Read%opts.Progress == 0 {
			logger.Info("redrive progress", "partition", m.Partition, "offset", m.Offset, "of", last, "summary", sum.String())
		}
		return nil
	})
	return sum, err
}

// Letters calls fn with each dead letter present in topic when it starts,
// partition by partition, and the partition's end offset then.
func Letters(ctx context.Context, cluster kafkaclient.Cluster, topic string, fn func(m kafka.Message, last int64) error) error {
	conn, err := cluster.Dial(ctx)
	if err != nil {
		return err
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		return fmt.Errorf("partitions of %s: %w", topic, err)
	}
	slices.SortFunc(parts, func(a, b kafka.Partition) int { return a.ID - b.ID })
	for _, p := range parts {
		first, last, err := kafkaclient.Bounds(ctx, cluster, topic, p.ID)
		if err != nil {
			return err
		}
		if first >= last {
			continue
		}
		if err := readRange(ctx, cluster, topic, p.ID, first, last, func(m kafka.Message) error { return fn(m, last) }); err != nil {
			return err
		}
	}
	return nil
}

// readRange calls fn with each message of the partition from first up to last.
func readRange(ctx context.Context, cluster kafkaclient.Cluster, topic string, partition int, first, last int64, fn func(kafka.Message) error) error {
	r := cluster.NewReader(kafka.ReaderConfig{Topic: topic, Partition: partition, MaxWait: kafkaclient.FetchWait})
	defer r.Close()
	if err := r.SetOffset(first); err != nil {
		return fmt.Errorf("seek %s/%d: %w", topic, partition, err)
	}
	for offset := first; offset < last; {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return fmt.Errorf("read %s/%d at %d: %w", topic, partition, offset, err)
		}
		offset = m.Offset + 1
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// PurgeSummary counts what a purge did with the dead letters it read.
type PurgeSummary struct {
	Read       int
	Purged     int
	Before     int // redriven or purged before: left as they are
	Unselected int // not among the letters asked for
}

func (s PurgeSummary) String() string {
	return fmt.Sprintf("dead letters read: %d, purged: %d, settled before: %d, not selected: %d", s.Read, s.Purged, s.Before, s.Unselected)
}

// PurgeOptions say which dead letters an operator discards, and who.
type PurgeOptions struct {
	DLQTopic string
	// Select picks the letters (all when empty); Kinds tells a letter's kind.
	Select []Selector
	Kinds  KindNames
	By     string
	// DryRun counts what would be purged, recording nothing.
	DryRun bool
	// Discarded, when set, hears of each letter purged (or, in a dry run, that
	// would be), so that an operator sees exactly what goes.
	Discarded func(Identity)
}

// Purge records the dead letters present in the topic (all, or those selected)
// as discarded, so that no redrive sends them; the letters stay in the
// topic until its retention deletes them (kafka-go speaks no DeleteRecords).
func Purge(ctx context.Context, cluster kafkaclient.Cluster, opts PurgeOptions, done *Redrives, keys Sealer) (PurgeSummary, error) {
	var sum PurgeSummary
	err := Letters(ctx, cluster, opts.DLQTopic, func(m kafka.Message, _ int64) error {
		sum.Read++
		out, _, _, err := original(m, keys)
		if err != nil {
			return fmt.Errorf("open %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
		}
		id := identityOf(m, out, opts.Kinds)
		if !selected(opts.Select, id) {
			sum.Unselected++
			return nil
		}
		letter := letterOf(m, out.Value)
		already, err := done.Done(ctx, letter)
		switch {
		case err != nil:
			return err
		case already:
			sum.Before++
			return nil
		case !opts.DryRun:
			if err := done.Purge(ctx, letter, m, letterEventID(m, out), opts.By); err != nil {
				return err
			}
		}
		sum.Purged++
		if opts.Discarded != nil {
			opts.Discarded(id)
		}
		return nil
	})
	return sum, err
}

// Letter reads the dead letter at partition:offset of topic.
func Letter(ctx context.Context, cluster kafkaclient.Cluster, topic string, partition int, offset int64) (kafka.Message, error) {
	first, last, err := kafkaclient.Bounds(ctx, cluster, topic, partition)
	if err != nil {
		return kafka.Message{}, err
	}
	if offset < first || offset >= last {
		return kafka.Message{}, fmt.Errorf("%w: %s/%d holds offsets %d to %d", ErrNoLetter, topic, partition, first, last-1)
	}
	var found kafka.Message
	err = readRange(ctx, cluster, topic, partition, offset, offset+1, func(m kafka.Message) error {
		found = m
		return nil
	})
	if err == nil && found.Offset != offset {
		err = fmt.Errorf("%w: %s/%d@%d (compacted away)", ErrNoLetter, topic, partition, offset)
	}
	return found, err
}

// ErrNoLetter is a dead letter that is not in its topic.
var ErrNoLetter = errors.New("no such dead letter")

// Describe is what a dead letter says of itself in its headers: where it came
// from and why, never its value.
func Describe(m kafka.Message) LetterInfo {
	li := LetterInfo{Partition: m.Partition, Offset: m.Offset, Time: m.Time, Bytes: len(m.Value), Whole: true}
	for _, h := range m.Headers {
		v := string(h.Value)
		switch h.Key {
		case HeaderTopic:
			li.FromTopic = v
		case HeaderPartition:
			li.FromPartition, _ = strconv.Atoi(v)
		case HeaderOffset:
			li.FromOffset, _ = strconv.ParseInt(v, 10, 64)
		case HeaderError:
			li.Error = v
		case HeaderGroup:
			li.Group = v
		case HeaderSealed:
			li.Sealed = true
		case HeaderPersonal:
			li.Personal = true
		case HeaderValueSHA256:
			li.Whole = false
		}
	}
	return li
}

// LetterInfo describes a dead letter without its value.
type LetterInfo struct {
	Partition     int       `json:"partition"`
	Offset        int64     `json:"offset"`
	Time          time.Time `json:"dead_lettered_at"`
	FromTopic     string    `json:"from_topic"`
	FromPartition int       `json:"from_partition"`
	FromOffset    int64     `json:"from_offset"`
	Group         string    `json:"consumer_group"`
	Error         string    `json:"error"`
	Sealed        bool      `json:"sealed"`
	Whole         bool      `json:"whole"`
	Bytes         int       `json:"bytes"`
	// Personal is a value sealed under its customer's data key too: erasing
	// the customer erases it.
	Personal bool `json:"personal"`
	// Identity is whom the letter speaks for: only Identify, which opens the
	// value, fills it.
	Identity Identity `json:"identity"`
}

// Open is the message a dead letter was made from, its value opened with keys
// when sealed; whole is false for a letter that kept only its value's start. A
// letter sealed under its customer's key (HeaderPersonal) stays sealed so:
// Reveal opens it.
func Open(m kafka.Message, keys Sealer) (out kafka.Message, whole bool, err error) {
	out, _, whole, err = original(m, keys)
	return out, whole, err
}

// redriveOne sends one dead letter back, unless it is not to be.
func redriveOne(ctx context.Context, m kafka.Message, opts RedriveOptions, w Writer, done *Redrives, keys Sealer, sum *RedriveSummary) error {
	sum.Read++
	out, from, whole, err := original(m, keys)
	if err != nil {
		return fmt.Errorf("open %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
	}
	switch {
	case !selected(opts.Select, identityOf(m, out, opts.Kinds)):
		sum.Unselected++
		return nil
	case !whole:
		sum.Cut++
		return nil
	case from != opts.RequestsTopic:
		sum.OtherTopic++
		return nil
	}
	letter, event := letterOf(m, out.Value), letterEventID(m, out)
	// The customer's layer is opened before anything is recorded: a letter
	// whose customer was erased is never sent, whatever was done with it.
	plain, erased, err := Reveal(ctx, m, out, opts.Customers)
	switch {
	case errors.Is(err, ErrLocked):
		sum.Locked++
		return nil
	case err != nil:
		return err
	case erased:
		sum.Erased++
		return nil
	}
	already, err := done.Done(ctx, letter)
	if err != nil {
		return err
	}
	if already {
		sum.Before++
		return nil
	}
	if opts.DryRun {
		sum.Redriven++
		return nil
	}
	plain.Topic = opts.RequestsTopic
	if err := w.WriteMessages(ctx, plain); err != nil {
		return fmt.Errorf("re-publish %s/%d@%d to %s: %w", m.Topic, m.Partition, m.Offset, plain.Topic, err)
	}
	if err := done.Record(ctx, letter, m, event); err != nil {
		return err
	}
	sum.Redriven++
	return nil
}

// letterEventID is the eventId a dead letter's record keeps: read from its
// value, or, for an envelope sealed under its customer's key, from its
// dlq.ce_id header (customerLayer.provenance).
func letterEventID(dl, out kafka.Message) string {
	if id := eventIDOf(out.Value); id != "" {
		return id
	}
	if _, ok := header(dl.Headers, HeaderPersonal); !ok || isStructured(out) || hasHeader(out.Headers, ceHeaderPrefix+"specversion") {
		return ""
	}
	id, _ := header(dl.Headers, "dlq.ce_id")
	if personal.IsSealed(id) { // it named the customer
		return ""
	}
	return id
}

// original rebuilds the message a dead letter was made from: its key, value
// (opened when sealed) and headers without the dlq ones; from is the topic it
// names, and whole is false for a letter that kept only the start of its value.
func original(m kafka.Message, keys Sealer) (out kafka.Message, from string, whole bool, err error) {
	out = kafka.Message{Key: m.Key, Value: m.Value}
	whole = true
	sealed := false
	for _, h := range m.Headers {
		switch {
		case h.Key == HeaderValueSHA256:
			whole = false
		case h.Key == HeaderTopic:
			from = string(h.Value)
		case h.Key == HeaderSealed:
			sealed = true
		case strings.HasPrefix(h.Key, "dlq."):
		default:
			out.Headers = append(out.Headers, h)
		}
	}
	if sealed && whole {
		out.Value, err = keys.Open(m.Value)
	}
	return out, from, whole, err
}

// eventIDOf reads the eventId of a possibly malformed event.
func eventIDOf(value []byte) string {
	var v struct {
		EventID string `json:"eventId"`
	}
	if json.Unmarshal(value, &v) != nil {
		return ""
	}
	return v.EventID
}
