//go:build stack

package consumer_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// An event of 900 KB whose error quotes 400 KB of it (an unknown field's name)
// made a dead letter over the writer's and the broker's 1 MiB, refused on every
// attempt: the partition never committed past it. Its dead letter now fits, and
// the good events after it on the same partition are placed and committed.
func TestOversizedPoisonNeverJamsItsPartition(t *testing.T) {
	p := newPipeline(t)
	value := fmt.Sprintf(`{"eventId":"huge","tenant":%q,"order":%s,%q:1,"pad":%q}`,
		p.tenant, orderJSON, strings.Repeat("f", 400<<10), strings.Repeat("p", 500<<10))
	msgs := []kafka.Message{{Key: []byte("same"), Value: []byte(value)}}
	for i := range 3 {
		msgs = append(msgs, kafka.Message{Key: []byte("same"), Value: event(fmt.Sprintf("after-huge-%d", i), p.tenant)})
	}
	p.produce(t, msgs...)
	p.runConsumer(t)
	stacktest.Eventually(t, 30*time.Second, "the events after the huge one placed and committed", func() bool {
		return p.processed(t) == 3 && len(p.lagging(t)) == 0
	})
	dl := p.deadLetters(t, 1)[0]
	head := map[string]string{}
	for _, h := range dl.Headers {
		head[h.Key] = string(h.Value)
	}
	// Sealing compresses: a value this repetitive is kept whole; another is cut to
	// fit, with its length and digest.
	opened, err := p.Codec.Open(dl.Value)
	whole := err == nil && string(opened) == value
	cut := head[consumer.HeaderValueBytes] == fmt.Sprint(len(value)) && head[consumer.HeaderValueSHA256] != ""
	if !(whole || cut) || head[consumer.HeaderSealed] != "1" ||
		head[consumer.HeaderTopic] != p.requests || head[consumer.HeaderOffset] != "0" || len(head[consumer.HeaderError]) > 2<<10 {
		t.Fatalf("dead letter headers: %v", func() map[string]int {
			sizes := map[string]int{}
			for k, v := range head {
				sizes[k] = len(v)
			}
			return sizes
		}())
	}
	t.Logf("a %d-byte poison event dead-lettered as %d bytes (whole: %v); the partition committed past it", len(value), len(dl.Value), whole)
}
