package consumer

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/internal/platform/payloadcodec"
)

func headerOf(m kafka.Message, key string) string {
	v, _ := header(m.Headers, key)
	return v
}

func testCodec(t *testing.T) *payloadcodec.Codec {
	t.Helper()
	ring, err := payloadcodec.ParseKeyring("k1:" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	return payloadcodec.New(ring)
}

// A dead letter always fits under the writer's and the broker's limits, keeps its
// provenance, and says what the value was when it cannot keep it whole.
func TestDeadLettersAlwaysFit(t *testing.T) {
	codec := testCodec(t)
	now := time.Unix(1700000000, 0)
	small := kafka.Message{Topic: "orders.requested", Partition: 2, Offset: 7, Key: []byte("k"), Value: []byte(`{"eventId":"e"}`),
		Headers: []kafka.Header{{Key: "traceparent", Value: []byte("00-abc")}}}
	dl, err := deadLetterOf(small, errors.New("unknown tenant"), "g", now, maxDeadLetterBytes, codec)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := codec.Open(dl.Value)
	if err != nil || string(opened) != string(small.Value) || string(dl.Key) != "k" || headerOf(dl, "traceparent") != "00-abc" ||
		headerOf(dl, HeaderOffset) != "7" || headerOf(dl, HeaderPartition) != "2" || headerOf(dl, HeaderError) != "unknown tenant" || headerOf(dl, HeaderValueSHA256) != "" {
		t.Fatalf("a small dead letter changed: %+v", dl)
	}

	value := make([]byte, 900<<10) // random: sealing compresses, and this does not
	if _, err := rand.Read(value); err != nil {
		t.Fatal(err)
	}
	big := kafka.Message{Topic: "orders.requested", Partition: 1, Offset: 9, Key: []byte(strings.Repeat("k", 10<<10)), Value: value,
		Headers: []kafka.Header{{Key: "junk", Value: []byte(strings.Repeat("h", 600<<10))}}}
	cause := fmt.Errorf("tenant: unknown tenant %q", strings.Repeat("t", 600<<10))
	for _, limit := range []int{maxDeadLetterBytes, 0} {
		dl, err := deadLetterOf(big, cause, "g", now, limit, codec)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(value)
		if n := messageBytes(dl); n > max(limit, 2<<10) {
			t.Fatalf("limit %d: the dead letter weighs %d bytes", limit, n)
		}
		if headerOf(dl, HeaderValueBytes) != fmt.Sprint(len(value)) || headerOf(dl, HeaderValueSHA256) != hex.EncodeToString(sum[:]) ||
			headerOf(dl, HeaderOffset) != "9" || headerOf(dl, "junk") != "" || len(headerOf(dl, HeaderError)) > maxErrorText+3 {
			t.Fatalf("limit %d: headers %v", limit, dl.Headers)
		}
		kept, err := codec.Open(dl.Value)
		if err != nil || !bytes.HasPrefix(value, kept) || (limit > 0 && len(kept) < 800<<10) {
			t.Fatalf("limit %d: kept %d bytes of the value (%v)", limit, len(kept), err)
		}
		if _, _, whole, _ := original(dl, codec); whole {
			t.Fatalf("limit %d: a cut dead letter would be redriven", limit)
		}
	}
}

// A poison event holding a card token and a customer ID, refused with an error
// that quotes the token: neither is anywhere in its dead letter in plain text, and
// a redrive gets the event back whole.
func TestDeadLettersKeepNoSecretInPlainText(t *testing.T) {
	codec := testCodec(t)
	value := []byte(`{"eventId":"e1","tenant":"acme","order":{"customer_id":"cus_SecretCustomer9","payment_method":"pm_card_SecretToken9","currency":"usd","items":[]}}`)
	m := kafka.Message{Topic: "orders.requested", Partition: 0, Offset: 3, Key: []byte("e1"), Value: value}
	dl, err := deadLetterOf(m, errors.New("payment_method pm_card_SecretToken9 refused"), "g", time.Now(), maxDeadLetterBytes, codec)
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]byte{}, dl.Key...), dl.Value...)
	for _, h := range dl.Headers {
		all = append(append(all, h.Key...), h.Value...)
	}
	for _, secret := range []string{"pm_card_SecretToken9", "cus_SecretCustomer9"} {
		if bytes.Contains(all, []byte(secret)) {
			t.Fatalf("%s is in the dead letter in plain text", secret)
		}
	}
	out, from, whole, err := original(dl, codec)
	if err != nil || !whole || from != "orders.requested" || !bytes.Equal(out.Value, value) {
		t.Fatalf("redrive would send %q from %q (whole %v, %v)", out.Value, from, whole, err)
	}
}

func TestLetterIsItsProvenanceAndValue(t *testing.T) {
	codec := testCodec(t)
	letter := func(offset int64, value string, dlqOffset int64) []byte {
		m := kafka.Message{Topic: "orders.requested", Partition: 1, Offset: offset, Value: []byte(value)}
		dl, err := deadLetterOf(m, errors.New("bad"), "g", time.Now(), maxDeadLetterBytes, codec)
		if err != nil {
			t.Fatal(err)
		}
		dl.Offset = dlqOffset
		out, _, _, err := original(dl, codec)
		if err != nil {
			t.Fatal(err)
		}
		return letterOf(dl, out.Value)
	}
	a := letter(7, "x", 0)
	if !bytes.Equal(a, letter(7, "x", 3)) {
		t.Fatal("the same message dead-lettered twice is two letters")
	}
	if bytes.Equal(a, letter(8, "x", 0)) || bytes.Equal(a, letter(7, "y", 0)) {
		t.Fatal("another message at the same dead-letter offset is the same letter")
	}
}
