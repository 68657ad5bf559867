// Package kafkaclient builds every kafka-go client of orderflow (writers, group
// and partition readers, admin connections) with the project's settings and the
// cluster's security, and closes them with a guard: kafka-go's Close can hang on
// some broker failures.
package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// dialTimeout bounds one connection to a broker, TLS and SASL included.
const dialTimeout = 10 * time.Second

// Dialer is how every reader and admin connection reaches the cluster.
func (c Cluster) Dialer() *kafka.Dialer {
	return &kafka.Dialer{Timeout: dialTimeout, DualStack: true, TLS: c.TLS, SASLMechanism: c.SASL}
}

// Transport is a writer's or a client's own transport: its cached metadata is not
// shared with other writers, as the process-wide default's would be.
func (c Cluster) Transport() *kafka.Transport {
	return &kafka.Transport{DialTimeout: dialTimeout, MetadataTTL: 5 * time.Second, TLS: c.TLS, SASL: c.SASL}
}

// Dial connects to the first bootstrap broker that answers.
func (c Cluster) Dial(ctx context.Context) (*kafka.Conn, error) {
	var errs []error
	for _, b := range c.Brokers {
		conn, err := c.Dialer().DialContext(ctx, "tcp", b)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("dial kafka: %w", errors.Join(errs...))
}

// DialLeader connects to the leader of one partition.
func (c Cluster) DialLeader(ctx context.Context, topic string, partition int) (*kafka.Conn, error) {
	var errs []error
	for _, b := range c.Brokers {
		conn, err := c.Dialer().DialLeader(ctx, "tcp", b, topic, partition)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("dial leader of %s/%d: %w", topic, partition, errors.Join(errs...))
}

// Client is an admin client of the cluster. Its transport keeps a connection
// to the cluster and asks for its metadata every few seconds until CloseClient:
// make one for many requests, and close it.
func (c Cluster) Client() *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(c.Brokers...), Timeout: 10 * time.Second, Transport: c.Transport()}
}

// CloseClient closes the connections a Client holds and stops its metadata
// refresh.
func CloseClient(cl *kafka.Client) {
	if t, ok := cl.Transport.(*kafka.Transport); ok {
		t.CloseIdleConnections()
	}
}

// NewReader returns a reader with the cluster's brokers and security set on cfg.
func (c Cluster) NewReader(cfg kafka.ReaderConfig) *kafka.Reader {
	cfg.Brokers, cfg.Dialer = c.Brokers, c.Dialer()
	return kafka.NewReader(cfg)
}

// NewWriter returns a writer for topic ("" when each message names its own) that
// waits for all in-sync replicas and does not hold a lone message back: kafka-go's
// defaults are no acks and a 1 s batch wait. Messages with the same key go to the
// same partition.
func NewWriter(c Cluster, topic string) *kafka.Writer {
	return &kafka.Writer{
		Transport:              c.Transport(),
		Addr:                   kafka.TCP(c.Brokers...),
		Topic:                  topic,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchTimeout:           5 * time.Millisecond,
		WriteTimeout:           10 * time.Second,
		AllowAutoTopicCreation: false,
	}
}

// NewConsumerGroup joins group on topic. Offsets start at the first message when
// the group has none; commits are explicit, through each generation; partitions
// added to the topic join the group's next generation.
func NewConsumerGroup(c Cluster, group, topic string, logger *slog.Logger) (*kafka.ConsumerGroup, error) {
	g, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                group,
		Brokers:           c.Brokers,
		Dialer:            c.Dialer(),
		Topics:            []string{topic},
		StartOffset:       kafka.FirstOffset,
		HeartbeatInterval: 2 * time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		JoinGroupBackoff:  time.Second,
		// Partitions an operator adds (for lag) end the generation within seconds,
		// so the next one assigns them: never left until an unrelated rebalance.
		WatchPartitionChanges:  true,
		PartitionWatchInterval: 5 * time.Second,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			logger.Warn(fmt.Sprintf(msg, args...), "component", "kafka-group")
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("consumer group %s: %w", group, err)
	}
	return g, nil
}

// FetchWait is the readers' MaxWait. kafka-go gives a fetch's answer until
// MaxWait to arrive and tells the broker to wait for records a quarter less
// (under a second) or a second less: at 250 ms an answer had 62 ms, which a
// busy machine misses fetch after fetch (each miss a new connection), and the
// partition stands still. At 2 s the broker waits up to a second and the answer
// has a second more; records that are there are answered at once (MinBytes 1),
// so it delays nothing.
const FetchWait = 2 * time.Second

// NewPartitionReader returns a reader of one partition of topic, outside any group:
// its offset is set by the caller and nothing is committed by it. It reads
// committed records only: records of aborted transactions and transaction markers
// never reach the caller (kafka-go is replaced by the copy in third_party/kafka-go,
// which filters them on its fetch path, segmentio/kafka-go#1332), and its Offset
// moves past the ones it hid.
func NewPartitionReader(c Cluster, topic string, partition int) *PartitionReader {
	return &PartitionReader{Reader: c.NewReader(kafka.ReaderConfig{
		Topic:          topic,
		Partition:      partition,
		MinBytes:       1,
		MaxBytes:       4 << 20,
		MaxWait:        FetchWait,
		IsolationLevel: kafka.ReadCommitted,
	}), c: c, topic: topic, partition: partition}
}

// PartitionReader is a reader of one partition that can tell the partition's bounds.
type PartitionReader struct {
	*kafka.Reader
	c         Cluster
	topic     string
	partition int
}

// Bounds returns the partition's first offset still retained and its end.
func (r *PartitionReader) Bounds(ctx context.Context) (first, end int64, err error) {
	return Bounds(ctx, r.c, r.topic, r.partition)
}

// Bounds returns the first offset of one partition still retained and its end
// (the high watermark), asked of the partition's leader.
func Bounds(ctx context.Context, c Cluster, topic string, partition int) (first, end int64, err error) {
	conn, err := c.DialLeader(ctx, topic, partition)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	first, end, err = conn.ReadOffsets()
	if err != nil {
		return 0, 0, fmt.Errorf("offsets of %s/%d: %w", topic, partition, err)
	}
	return first, end, nil
}

// Close runs close but gives up after timeout (or ctx's deadline), returning an
// error that says so.
func Close(ctx context.Context, timeout time.Duration, close func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- close() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("abandoned at the deadline: %w", ctx.Err())
	}
}

// EndOffset returns the offset after the last message of one partition (its high
// watermark), asked of the partition's leader.
func EndOffset(ctx context.Context, c Cluster, topic string, partition int) (int64, error) {
	conn, err := c.DialLeader(ctx, topic, partition)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	end, err := conn.ReadLastOffset()
	if err != nil {
		return 0, fmt.Errorf("end offset of %s/%d: %w", topic, partition, err)
	}
	return end, nil
}

// CreateTopic creates topic with the given partitions and replication factor and
// waits until every partition's leader serves it, so first writes do not fail. A
// replicated topic takes writes while one replica is down, and not with fewer:
// min.insync.replicas is one less than the replication factor.
func CreateTopic(ctx context.Context, c Cluster, topic string, partitions, replicas int) error {
	conn, err := c.Dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		return fmt.Errorf("kafka controller: %w", err)
	}
	cc, err := c.Dialer().DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return fmt.Errorf("dial kafka controller: %w", err)
	}
	defer cc.Close()
	if err := cc.CreateTopics(kafka.TopicConfig{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: replicas,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "min.insync.replicas", ConfigValue: strconv.Itoa(max(replicas-1, 1))}},
	}); err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	// A busy broker (many topics created at once) takes a while to elect leaders.
	deadline := time.Now().Add(leaderWait)
	for p := 0; p < partitions; {
		if _, err := EndOffset(ctx, c, topic, p); err == nil {
			p++
			continue
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("topic %s: partition %d has no leader after %s", topic, p, leaderWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// leaderWait bounds how long a new topic's partitions may go without a leader.
const leaderWait = time.Minute

// Partitions returns how many partitions topic has; 0 when it does not exist. It
// reads every topic's partitions: asked for one topic that does not exist, a
// broker that creates none answers with an error kafka-go keeps retrying.
func Partitions(ctx context.Context, c Cluster, topic string) (int, error) {
	conn, err := c.Dial(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	parts, err := conn.ReadPartitions()
	if err != nil {
		return 0, fmt.Errorf("list partitions: %w", err)
	}
	n := 0
	for _, p := range parts {
		if p.Topic == topic {
			n++
		}
	}
	return n, nil
}
