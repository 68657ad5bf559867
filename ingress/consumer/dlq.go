package consumer

import (
	"context"
	"encoding/json"
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
)

// deadLetter sends a poison message to the dead-letter topic with where it came
// from and why; once written, the message counts as settled and is committed.
func (c *Consumer) deadLetter(ctx context.Context, m kafka.Message, cause error) error {
	headers := append(slices.Clone(m.Headers),
		kafka.Header{Key: HeaderTopic, Value: []byte(m.Topic)},
		kafka.Header{Key: HeaderPartition, Value: []byte(strconv.Itoa(m.Partition))},
		kafka.Header{Key: HeaderOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))},
		kafka.Header{Key: HeaderError, Value: []byte(cause.Error())},
		kafka.Header{Key: HeaderGroup, Value: []byte(c.opts.Group)},
		kafka.Header{Key: HeaderFailedAt, Value: []byte(time.Now().UTC().Format(time.RFC3339Nano))},
	)
	if err := c.dlq.WriteMessages(ctx, kafka.Message{Key: m.Key, Value: m.Value, Headers: headers}); err != nil {
		return fmt.Errorf("dead-letter partition %d offset %d: %w", m.Partition, m.Offset, err)
	}
	c.m.deadLettered.Inc()
	c.logger.WarnContext(ctx, "poison message dead-lettered", "partition", m.Partition, "offset", m.Offset, "reason", cause.Error())
	return nil
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

// redriven rebuilds the original message of a dead letter, if eventIDs selects it.
func redriven(m kafka.Message, eventIDs []string) (kafka.Message, bool) {
	out := kafka.Message{Key: m.Key, Value: m.Value}
	for _, h := range m.Headers {
		switch {
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
