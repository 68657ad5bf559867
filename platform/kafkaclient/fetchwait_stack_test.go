//go:build stack

package kafkaclient_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// slowConn is a connection to a broker whose every answer takes delay to arrive:
// a broker far away, or a machine too busy to read it sooner.
type slowConn struct {
	net.Conn
	delay time.Duration
}

func (c slowConn) Read(b []byte) (int, error) {
	time.Sleep(c.delay)
	return c.Conn.Read(b)
}

// A partition reader reads from a broker whose answers take 400 ms to arrive.
// kafka-go gives a fetch's answer until MaxWait to arrive: at the 250 ms the
// partition readers had, every fetch missed it and no message was ever read;
// at FetchWait all are.
func TestAPartitionIsReadFromABrokerWhoseAnswersAreSlow(t *testing.T) {
	t.Parallel()
	c := stacktest.Kafka(t)
	topic := stacktest.Topic(t, 1)
	w := kafkaclient.NewWriter(c, topic)
	defer w.Close()
	const n = 3
	for i := range n {
		if err := w.WriteMessages(context.Background(), kafka.Message{Value: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(maxWait, within time.Duration) int {
		d := c.Dialer()
		var dialer net.Dialer
		d.DialFunc = func(ctx context.Context, network, address string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, address)
			if err != nil {
				return nil, err
			}
			return slowConn{Conn: conn, delay: 400 * time.Millisecond}, nil
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.Brokers, Dialer: d, Topic: topic, Partition: 0,
			MinBytes: 1, MaxBytes: 4 << 20, MaxWait: maxWait, IsolationLevel: kafka.ReadCommitted})
		defer r.Close()
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		got := 0
		for got < n {
			if _, err := r.ReadMessage(ctx); err != nil {
				break
			}
			got++
		}
		return got
	}
	if got := read(kafkaclient.FetchWait, 20*time.Second); got != n {
		t.Fatalf("at FetchWait (%s), %d of %d messages read in 20 s", kafkaclient.FetchWait, got, n)
	}
	if got := read(250*time.Millisecond, 8*time.Second); got != 0 {
		t.Fatalf("at 250 ms, %d of %d messages read in 8 s: the slow broker is not slow enough to tell", got, n)
	}
}
