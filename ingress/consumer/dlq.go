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
)

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
func (c *Consumer) deadLetter(ctx context.Context, m kafka.Message, cause error) error {
	dl := deadLetterOf(m, cause, c.opts.Group, time.Now(), maxDeadLetterBytes)
	err := c.dlq.WriteMessages(ctx, dl)
	if tooLarge(err) {
		// The broker takes less than the default: keep the provenance and the
		// value's digest only.
		dl = deadLetterOf(m, cause, c.opts.Group, time.Now(), 0)
		err = c.dlq.WriteMessages(ctx, dl)
	}
	if err != nil {
		return fmt.Errorf("dead-letter partition %d offset %d: %w", m.Partition, m.Offset, err)
	}
	c.m.deadLettered.Inc()
	c.logger.WarnContext(ctx, "poison message dead-lettered", "partition", m.Partition, "offset", m.Offset, "reason", cause.Error())
	return nil
}

// deadLetterOf is the dead letter of m: its key, value and headers, then the
// provenance headers, the error text capped at maxErrorText. A dead letter over limit
// bytes drops the original key and headers and keeps as much of the value's start
// as fits, with its length and digest in HeaderValueBytes and HeaderValueSHA256.
func deadLetterOf(m kafka.Message, cause error, group string, now time.Time, limit int) kafka.Message {
	reason := cause.Error()
	if len(reason) > maxErrorText {
		reason = strings.ToValidUTF8(reason[:maxErrorText], "") + "…"
	}
	provenance := []kafka.Header{
		{Key: HeaderTopic, Value: []byte(m.Topic)},
		{Key: HeaderPartition, Value: []byte(strconv.Itoa(m.Partition))},
		{Key: HeaderOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))},
		{Key: HeaderError, Value: []byte(reason)},
		{Key: HeaderGroup, Value: []byte(group)},
		{Key: HeaderFailedAt, Value: []byte(now.UTC().Format(time.RFC3339Nano))},
	}
	dl := kafka.Message{Key: m.Key, Value: m.Value, Headers: append(slices.Clone(m.Headers), provenance...)}
	if messageBytes(dl) <= limit {
		return dl
	}
	sum := sha256.Sum256(m.Value)
	dl = kafka.Message{Headers: append(provenance,
		kafka.Header{Key: HeaderValueBytes, Value: []byte(strconv.Itoa(len(m.Value)))},
		kafka.Header{Key: HeaderValueSHA256, Value: []byte(hex.EncodeToString(sum[:]))})}
	dl.Value = m.Value[:min(len(m.Value), max(0, limit-messageBytes(dl)))]
	return dl
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

// RedriveSummary counts what a redrive did.
type RedriveSummary struct {
	Read, Redriven, Skipped int
}

// Redrive re-publishes the dead letters present in dlqTopic when it starts (all, or
// those whose eventId is in eventIDs) to their original topics, without the dlq
// headers. Redriven events dedup by eventId like any redelivery, so running it twice
// is harmless. w must not have a Topic of its own.
func Redrive(ctx context.Context, brokers []string, dlqTopic string, eventIDs []string, w Writer, logger *slog.Logger) (RedriveSummary, error) {
	var sum RedriveSummary
	conn, err := kafka.DialContext(ctx, "tcp", brokers[0])
	if err != nil {
		return sum, fmt.Errorf("dial %s: %w", brokers[0], err)
	}
	parts, err := conn.ReadPartitions(dlqTopic)
	conn.Close()
	if err != nil {
		return sum, fmt.Errorf("partitions of %s: %w", dlqTopic, err)
	}
	for _, p := range parts {
		first, last, err := offsets(ctx, brokers[0], dlqTopic, p.ID)
		if err != nil {
			return sum, err
		}
		if first >= last {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: dlqTopic, Partition: p.ID, MaxWait: 200 * time.Millisecond})
		if err := r.SetOffset(first); err != nil {
			r.Close()
			return sum, fmt.Errorf("seek %s/%d: %w", dlqTopic, p.ID, err)
		}
		for offset := first; offset < last; {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				return sum, fmt.Errorf("read %s/%d at %d: %w", dlqTopic, p.ID, offset, err)
			}
			offset = m.Offset + 1
			sum.Read++
			out, ok := redriven(m, eventIDs)
			if !ok {
				sum.Skipped++
				continue
			}
			if err := w.WriteMessages(ctx, out); err != nil {
				r.Close()
				return sum, fmt.Errorf("re-publish %s/%d@%d to %s: %w", dlqTopic, p.ID, m.Offset, out.Topic, err)
			}
			sum.Redriven++
			logger.Info("redriven", "from", fmt.Sprintf("%s/%d@%d", dlqTopic, p.ID, m.Offset), "to", out.Topic)
		}
		r.Close()
	}
	return sum, nil
}

func offsets(ctx context.Context, broker, topic string, partition int) (first, last int64, err error) {
	conn, err := kafka.DialLeader(ctx, "tcp", broker, topic, partition)
	if err != nil {
		return 0, 0, fmt.Errorf("dial leader of %s/%d: %w", topic, partition, err)
	}
	defer conn.Close()
	first, last, err = conn.ReadOffsets()
	if err != nil {
		return 0, 0, fmt.Errorf("offsets of %s/%d: %w", topic, partition, err)
	}
	return first, last, nil
}

// redriven rebuilds the original message of a dead letter, if eventIDs selects it;
// a dead letter that kept only the start of its value cannot be.
func redriven(m kafka.Message, eventIDs []string) (kafka.Message, bool) {
	out := kafka.Message{Key: m.Key, Value: m.Value}
	for _, h := range m.Headers {
		switch {
		case h.Key == HeaderValueSHA256:
			return out, false
		case h.Key == HeaderTopic:
			out.Topic = string(h.Value)
		case strings.HasPrefix(h.Key, "dlq."):
		default:
			out.Headers = append(out.Headers, h)
		}
	}
	if out.Topic == "" {
		return out, false
	}
	if len(eventIDs) == 0 {
		return out, true
	}
	id := eventIDOf(m.Value)
	return out, id != "" && slices.Contains(eventIDs, id)
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
