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

	"github.com/orderflow/orderflow/platform/payloadcodec"
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

// A letter says whose it is, whatever its form: an envelope's tenant, member and
// eventId, a CloudEvent's tenant, type, source and id (from the dlq.ce_* headers
// when its value was cut); and a selector picks it only by all of them.
func TestLettersSayWhoseTheyAre(t *testing.T) {
	codec := testCodec(t)
	kinds := KindNames{byField: map[string]string{"order": "order", "refund": "refund"},
		byType: map[string]string{"t.Order": "order", "t.Refund": "refund"}}
	structured := []kafka.Header{{Key: "content-type", Value: []byte("application/cloudevents+json")}}
	ce := `{"specversion":"1.0","id":"e-1","source":"shop","type":"t.Refund","tenant":"beta","data":{}}`
	for _, tt := range []struct {
		name  string
		m     kafka.Message
		limit int
		want  Identity
	}{
		{"order", kafka.Message{Value: []byte(`{"eventId":"e-1","tenant":"demo","order":{"bad":1}}`)}, maxDeadLetterBytes,
			Identity{Tenant: "demo", Kind: "order", EventID: "e-1"}},
		{"refund", kafka.Message{Value: []byte(`{"eventId":"e-1","tenant":"beta","refund":{},"order":null}`)}, maxDeadLetterBytes,
			Identity{Tenant: "beta", Kind: "refund", EventID: "e-1"}},
		{"two kinds", kafka.Message{Value: []byte(`{"eventId":"e-1","tenant":"beta","refund":{},"order":{}}`)}, maxDeadLetterBytes,
			Identity{Tenant: "beta", EventID: "e-1"}},
		{"not JSON", kafka.Message{Value: []byte(`e-1`)}, maxDeadLetterBytes, Identity{}},
		{"binary", kafka.Message{Value: []byte(`{}`), Headers: []kafka.Header{{Key: "ce_specversion", Value: []byte("1.0")},
			{Key: "ce_id", Value: []byte("e-1")}, {Key: "ce_source", Value: []byte("shop")}, {Key: "ce_type", Value: []byte("t.Order")},
			{Key: "ce_tenant", Value: []byte("demo")}}}, maxDeadLetterBytes, Identity{Tenant: "demo", Kind: "order", EventID: "e-1", Source: "shop"}},
		{"structured", kafka.Message{Value: []byte(ce), Headers: structured}, maxDeadLetterBytes,
			Identity{Tenant: "beta", Kind: "refund", EventID: "e-1", Source: "shop"}},
		{"structured, cut", kafka.Message{Value: []byte(ce), Headers: structured}, 0,
			Identity{Tenant: "beta", Kind: "refund", EventID: "e-1", Source: "shop"}},
	} {
		dl, err := deadLetterOf(tt.m, errors.New("bad"), "g", time.Now(), tt.limit, codec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Identify(dl, codec, kinds)
		if err != nil {
			t.Fatal(err)
		}
		id := got.Identity
		if len(id.ID) != 64 {
			t.Errorf("%s: letter ID %q", tt.name, id.ID)
		}
		tt.want.ID = id.ID
		if id != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, id, tt.want)
		}
	}
	order := Identity{ID: "1", Tenant: "demo", Kind: "order", EventID: "e-1"}
	cloud := Identity{ID: "2", Tenant: "demo", Kind: "order", EventID: "e-1", Source: "shop"}
	bySel := Selector{Tenant: "demo", Kind: "order", EventID: "e-1"}
	if !bySel.Matches(order) || bySel.Matches(cloud) || (Selector{Tenant: "beta", Kind: "order", EventID: "e-1"}).Matches(order) ||
		(Selector{Tenant: "demo", Kind: "refund", EventID: "e-1"}).Matches(order) || (Selector{EventID: "e-1"}).Matches(order) {
		t.Error("a selector picks a letter of another tenant, kind or source, or by an eventId alone")
	}
	if bySel.Source = "shop"; !bySel.Matches(cloud) || !(Selector{ID: "2"}).Matches(cloud) || (Selector{ID: "2"}).Matches(order) {
		t.Error("a selector misses its letter")
	}
}
