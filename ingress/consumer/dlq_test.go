package consumer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// A dead letter always fits under the writer's and the broker's limits, keeps its
// provenance, and says what the value was when it cannot keep it whole.
func TestDeadLettersAlwaysFit(t *testing.T) {
	now := time.Unix(1700000000, 0)
	small := kafka.Message{Topic: "orders.requested", Partition: 2, Offset: 7, Key: []byte("k"), Value: []byte(`{"eventId":"e"}`),
		Headers: []kafka.Header{{Key: "traceparent", Value: []byte("00-abc")}}}
	dl := deadLetterOf(small, errors.New("unknown tenant"), "g", now, maxDeadLetterBytes)
	if string(dl.Value) != string(small.Value) || string(dl.Key) != "k" || header(dl, "traceparent") != "00-abc" ||
		header(dl, HeaderOffset) != "7" || header(dl, HeaderPartition) != "2" || header(dl, HeaderError) != "unknown tenant" || header(dl, HeaderValueSHA256) != "" {
		t.Fatalf("a small dead letter changed: %+v", dl)
	}

	value := []byte(strings.Repeat("v", 900<<10))
	big := kafka.Message{Topic: "orders.requested", Partition: 1, Offset: 9, Key: []byte(strings.Repeat("k", 10<<10)), Value: value,
		Headers: []kafka.Header{{Key: "junk", Value: []byte(strings.Repeat("h", 600<<10))}}}
	cause := fmt.Errorf("tenant: unknown tenant %q", strings.Repeat("t", 600<<10))
	for _, limit := range []int{maxDeadLetterBytes, 0} {
		dl := deadLetterOf(big, cause, "g", now, limit)
		sum := sha256.Sum256(value)
		if n := messageBytes(dl); n > max(limit, 2<<10) {
			t.Fatalf("limit %d: the dead letter weighs %d bytes", limit, n)
		}
		if header(dl, HeaderValueBytes) != fmt.Sprint(len(value)) || header(dl, HeaderValueSHA256) != hex.EncodeToString(sum[:]) ||
			header(dl, HeaderOffset) != "9" || header(dl, "junk") != "" || len(header(dl, HeaderError)) > maxErrorText+3 {
			t.Fatalf("limit %d: headers %v", limit, dl.Headers)
		}
		if !strings.HasPrefix(string(value), string(dl.Value)) || (limit > 0 && len(dl.Value) < 800<<10) {
			t.Fatalf("limit %d: kept %d bytes of the value", limit, len(dl.Value))
		}
		if _, _, whole := original(dl); whole {
			t.Fatalf("limit %d: a cut dead letter would be redriven", limit)
		}
	}
}
