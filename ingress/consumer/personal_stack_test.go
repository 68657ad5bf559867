//go:build stack

package consumer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/personal"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// A poison order of customer C (its currency is unknown) is dead-lettered under
// C's data key: the letter's bytes in Kafka hold neither C nor the card, a
// customer_letters row counts it, and the letter readers open it to the order
// as it was sent. Once C's key is destroyed (the erasure), the letter reads
// "[erased]" and a redrive refuses it.
func TestAPoisonOrdersLetterIsErasedWithItsCustomer(t *testing.T) {
	ctx := context.Background()
	p := newPipeline(t)
	store, err := custkeys.Open(ctx, p.Pool, p.Codec)
	if err != nil {
		t.Fatal(err)
	}
	customer, card := stacktest.Name("cust_secret"), stacktest.Name("pm_card_secret")
	value := []byte(fmt.Sprintf(`{"eventId":"poison-1","tenant":%q,"order":{"customer_id":%q,"currency":"XYZ","items":[{"sku":"a","quantity":1,"unit_amount":100}],"payment_method":%q}}`,
		p.tenant, customer, card))
	p.produce(t, kafka.Message{Key: []byte("poison-1"), Value: value})
	opts := consumer.Options{Group: p.group, CommitInterval: 50 * time.Millisecond, Customers: consumer.NewCustomers(p.Pool, store)}
	_, stop := p.runConsumerWith(t, opts, p.dlq)
	dl := p.deadLetters(t, 1)[0]
	stop()

	raw := append(append([]byte{}, dl.Key...), dl.Value...)
	for _, h := range dl.Headers {
		raw = append(append(raw, h.Key...), h.Value...)
	}
	for _, secret := range []string{customer, card} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Fatalf("%s is in the dead letter's bytes in plain text", secret)
		}
	}
	hash := store.Hasher().Hash(p.tenant, customer)
	var rows int
	if err := p.Pool.QueryRow(ctx, `SELECT count(*) FROM customer_letters WHERE tenant = $1 AND customer_hash = $2 AND topic = $3 AND event_id = 'poison-1'`,
		p.tenant, hash, p.requests).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d customer_letters rows for the letter (%v)", rows, err)
	}

	// As worker dlq show and the console read it: by its place, both layers opened.
	m, err := consumer.Letter(ctx, p.Kafka, p.dlq, dl.Partition, dl.Offset)
	if err != nil {
		t.Fatal(err)
	}
	read := func() (kafka.Message, bool) {
		t.Helper()
		out, whole, err := consumer.Open(m, p.Codec)
		if err != nil || !whole {
			t.Fatalf("open the letter: whole %v, %v", whole, err)
		}
		plain, erased, err := consumer.Reveal(ctx, m, out, store)
		if err != nil {
			t.Fatal(err)
		}
		return plain, erased
	}
	if plain, erased := read(); erased || !bytes.Equal(plain.Value, value) || string(plain.Key) != "poison-1" {
		t.Fatalf("the letter reads %q (key %q, erased %v), want the order sent", plain.Value, plain.Key, erased)
	}
	info, err := consumer.Identify(m, p.Codec, kindNames())
	if id := info.Identity; err != nil || id.Tenant != p.tenant || id.Kind != order.Kind || id.EventID != "poison-1" || !info.Personal {
		t.Fatalf("the letter says %+v, personal %v (%v)", info.Identity, info.Personal, err)
	}
	w := p.writer("")
	defer w.Close()
	redrive := func(want consumer.RedriveSummary) {
		t.Helper()
		ro := consumer.RedriveOptions{DLQTopic: p.dlq, RequestsTopic: p.requests, Kinds: kindNames(), Customers: store, DryRun: true}
		sum, err := consumer.Redrive(ctx, p.Kafka, ro, w, consumer.NewRedrives(p.Pool), p.Codec, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil || sum != want {
			t.Fatalf("redrive: %s (%v); want %s", sum, err, want)
		}
	}
	redrive(consumer.RedriveSummary{Read: 1, Redriven: 1})

	if _, err := store.Destroy(ctx, p.tenant, hash); err != nil {
		t.Fatal(err)
	}
	if plain, erased := read(); !erased || string(plain.Value) != personal.Erased {
		t.Fatalf("after the erasure the letter reads %q (erased %v)", plain.Value, erased)
	}
	redrive(consumer.RedriveSummary{Read: 1, Erased: 1})
	if info, err := consumer.Identify(m, p.Codec, kindNames()); err != nil || info.Identity.EventID != "poison-1" {
		t.Fatalf("after the erasure the letter says %+v (%v)", info.Identity, err)
	}
}
