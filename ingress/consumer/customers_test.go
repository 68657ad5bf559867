package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/platform/personal"
)

// fakeKeys is custkeys.Store in memory: one key per (tenant, customer), until
// erased.
type fakeKeys struct {
	hasher personal.Hasher
	live   map[string]personal.Key // by tenant and customer
	byID   map[string]personal.Key
	fail   error
}

func newFakeKeys(t *testing.T) *fakeKeys {
	t.Helper()
	h, err := personal.NewHasher(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return &fakeKeys{hasher: h, live: map[string]personal.Key{}, byID: map[string]personal.Key{}}
}

func (f *fakeKeys) For(_ context.Context, tenant, customer string) (personal.Key, error) {
	if f.fail != nil {
		return personal.Key{}, f.fail
	}
	if k, ok := f.live[tenant+"\x00"+customer]; ok {
		return k, nil
	}
	k, err := personal.NewKey(personal.NewKeyID(), tenant, personal.NewRaw())
	if err != nil {
		return personal.Key{}, err
	}
	f.live[tenant+"\x00"+customer], f.byID[k.ID] = k, k
	return k, nil
}

func (f *fakeKeys) Hasher() personal.Hasher { return f.hasher }

func (f *fakeKeys) Reveal(_ context.Context, tenant, value string) (string, error) {
	id, ok := personal.KeyID(value)
	if !ok {
		return value, nil
	}
	k, ok := f.byID[id]
	if !ok || k.Tenant != tenant {
		return "", fmt.Errorf("key %s: %w", id, personal.ErrErased)
	}
	return k.Open(value)
}

// erase destroys every key of the customer.
func (f *fakeKeys) erase(tenant, customer string) {
	k := f.live[tenant+"\x00"+customer]
	delete(f.live, tenant+"\x00"+customer)
	delete(f.byID, k.ID)
}

// rows records the statements run.
type rows struct{ args [][]any }

func (r *rows) Exec(_ context.Context, _ string, args ...any) (pgconn.CommandTag, error) {
	r.args = append(r.args, args)
	return pgconn.NewCommandTag("INSERT 0 1"), nil
}

type letterBox struct{ letters []kafka.Message }

func (b *letterBox) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	b.letters = append(b.letters, msgs...)
	return nil
}

type someTenants map[string]bool

func (s someTenants) Exists(_ context.Context, tenant string) (bool, error) { return s[tenant], nil }

// letterConsumer is a consumer that dead-letters into box, with customer keys.
func letterConsumer(t *testing.T, keys *fakeKeys, db *rows, box *letterBox) *Consumer {
	t.Helper()
	return &Consumer{opts: Options{Group: "g", Customers: NewCustomers(db, keys)}, dlq: box, seal: testCodec(t),
		decoder: ordersOnly, tenants: someTenants{"acme": true}, logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		m: NewMetrics(prometheus.NewRegistry())}
}

// rawBytes is everything a letter holds on the wire.
func rawBytes(m kafka.Message) []byte {
	all := append(append([]byte{}, m.Key...), m.Value...)
	for _, h := range m.Headers {
		all = append(append(all, h.Key...), h.Value...)
	}
	return all
}

const (
	secretCustomer = "cust_secret_42"
	secretCard     = "pm_card_secret_77"
)

// poisonOrder is an order of secretCustomer that dead-letters: its currency is
// unknown. The customer is in its key and a header too.
func poisonOrder() kafka.Message {
	value := `{"eventId":"e-42","tenant":"acme","order":{"customer_id":"` + secretCustomer +
		`","currency":"XYZ","items":[{"sku":"a","quantity":1,"unit_amount":100}],"payment_method":"` + secretCard + `"}}`
	return kafka.Message{Topic: "orders.requested", Partition: 2, Offset: 11, Key: []byte("order-of-" + secretCustomer), Value: []byte(value),
		Headers: []kafka.Header{{Key: "x-customer", Value: []byte(secretCustomer)}, {Key: "traceparent", Value: []byte("00-abc")}}}
}

// A poison order of a customer is dead-lettered under the customer's key:
// nothing of the customer or the card in plain bytes, a customer_letters row,
// whom it speaks for still readable; the customer keys open it to the original;
// once the customer is erased it reads "[erased]" and a redrive refuses it.
func TestALettersCustomerIsSealedUnderTheirKey(t *testing.T) {
	keys, db, box := newFakeKeys(t), &rows{}, &letterBox{}
	c := letterConsumer(t, keys, db, box)
	m := poisonOrder()
	if err := c.deadLetter(context.Background(), m, errors.New(`order.customer_id "`+secretCustomer+`": currency XYZ unknown`)); err != nil {
		t.Fatal(err)
	}
	if len(box.letters) != 1 {
		t.Fatalf("%d letters written", len(box.letters))
	}
	dl := box.letters[0]
	for _, secret := range []string{secretCustomer, secretCard} {
		if bytes.Contains(rawBytes(dl), []byte(secret)) {
			t.Fatalf("%s is in the letter in plain text: %q", secret, rawBytes(dl))
		}
	}
	key := keys.live["acme\x00"+secretCustomer]
	if len(db.args) != 1 || fmt.Sprintln(db.args[0][0], db.args[0][2], db.args[0][3], db.args[0][4]) != "acme orders.requested e-42 "+key.ID+"\n" ||
		!bytes.Equal(db.args[0][1].([]byte), keys.hasher.Hash("acme", secretCustomer)) {
		t.Fatalf("customer_letters rows %v, want acme's customer's e-42 under %s", db.args, key.ID)
	}
	info, err := Identify(dl, c.seal, NamesOf(orders.New(nil, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if id := info.Identity; id.Tenant != "acme" || id.Kind != "order" || id.EventID != "e-42" || !info.Personal {
		t.Fatalf("the letter says %+v (personal %v)", id, info.Personal)
	}
	out, whole, err := Open(dl, c.seal)
	if err != nil || !whole || !personal.IsSealed(string(out.Value)) {
		t.Fatalf("opened with the payload keys: %q (whole %v, %v), want the customer's sealed value", out.Value, whole, err)
	}
	if _, _, err := Reveal(context.Background(), dl, out, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("revealed without customer keys: %v", err)
	}
	plain, erased, err := Reveal(context.Background(), dl, out, keys)
	if err != nil || erased || !bytes.Equal(plain.Value, m.Value) || !bytes.Equal(plain.Key, m.Key) ||
		headerOf(plain, "x-customer") != secretCustomer || headerOf(plain, "traceparent") != "00-abc" {
		t.Fatalf("revealed %q key %q headers %v (erased %v, %v)", plain.Value, plain.Key, plain.Headers, erased, err)
	}

	// The same message dead-lettered again (a crash before its commit) is the
	// same letter.
	if err := c.deadLetter(context.Background(), m, errors.New("bad")); err != nil {
		t.Fatal(err)
	}
	again, err := Identify(box.letters[1], c.seal, NamesOf(orders.New(nil, nil)))
	if err != nil || again.Identity.ID != info.Identity.ID {
		t.Fatalf("dead-lettered twice: letters %s and %s (%v)", info.Identity.ID, again.Identity.ID, err)
	}

	keys.erase("acme", secretCustomer)
	gone, erased, err := Reveal(context.Background(), dl, out, keys)
	if err != nil || !erased || string(gone.Value) != personal.Erased || string(gone.Key) != personal.Erased ||
		headerOf(gone, "x-customer") != personal.Erased || headerOf(gone, "traceparent") != "00-abc" {
		t.Fatalf("after erasure: %q key %q headers %v (erased %v, %v)", gone.Value, gone.Key, gone.Headers, erased, err)
	}
	w := &letterBox{}
	var sum RedriveSummary
	opts := RedriveOptions{RequestsTopic: "orders.requested", Customers: keys}
	if err := redriveOne(context.Background(), dl, opts, w, nil, c.seal, &sum); err != nil {
		t.Fatal(err)
	}
	opts.Customers = nil
	if err := redriveOne(context.Background(), dl, opts, w, nil, c.seal, &sum); err != nil {
		t.Fatal(err)
	}
	if sum != (RedriveSummary{Read: 2, Erased: 1, Locked: 1}) || len(w.letters) != 0 || !strings.Contains(sum.String(), "customer erased") {
		t.Fatalf("redrive of an erased customer's letter: %s; %d written", sum, len(w.letters))
	}
}

// Letters whose customer cannot be read, or whose tenant does not exist, are
// sealed as before; a customer key that cannot be had leaves the message
// unsettled, never written in the clear.
func TestLettersWithoutAKnownCustomerStayAsTheyWere(t *testing.T) {
	keys, db, box := newFakeKeys(t), &rows{}, &letterBox{}
	c := letterConsumer(t, keys, db, box)
	for _, v := range []string{
		`not json ` + secretCustomer,
		`{"eventId":"e-1","tenant":"acme","order":{"currency":"XYZ"}}`,
		`{"eventId":"e-1","tenant":"nobody","order":{"customer_id":"` + secretCustomer + `"}}`,
		`{"eventId":"e-1","tenant":"Not A Tenant","order":{"customer_id":"` + secretCustomer + `"}}`,
	} {
		m := kafka.Message{Topic: "orders.requested", Value: []byte(v)}
		if err := c.deadLetter(context.Background(), m, errors.New("bad")); err != nil {
			t.Fatal(err)
		}
		dl := box.letters[len(box.letters)-1]
		out, _, err := Open(dl, c.seal)
		if _, personal := header(dl.Headers, HeaderPersonal); err != nil || personal || string(out.Value) != v {
			t.Fatalf("%s: letter of %q (customer layer %v, %v)", v, out.Value, personal, err)
		}
	}
	if len(db.args) != 0 || len(keys.live) != 0 {
		t.Fatalf("rows %v and keys %v for letters of no known customer", db.args, keys.live)
	}
	keys.fail = errors.New("database down")
	n := len(box.letters)
	if err := c.deadLetter(context.Background(), poisonOrder(), errors.New("bad")); err == nil || len(box.letters) != n {
		t.Fatalf("without the customer's key: %v, %d letters written", err, len(box.letters)-n)
	}
}

// The customer's tenant and ID are read from every shape the decoder takes.
func TestLettersCustomerFromEveryShape(t *testing.T) {
	order := `{"customer_id":"c-1","currency":"XYZ"}`
	for _, tt := range []struct {
		name string
		m    kafka.Message
		want named
		ok   bool
	}{
		{"envelope", binary(`{"eventId":"e1","tenant":"acme","order":` + order + `}`),
			named{tenant: "acme", customer: "c-1", eventID: "e1", ceType: orders.RequestedType}, true},
		{"unknown member", binary(`{"eventId":"e1","tenant":"acme","parcel":` + order + `}`),
			named{tenant: "acme", customer: "c-1", eventID: "e1"}, true},
		{"number", binary(`{"tenant":"acme","order":{"customer_id":12345}}`), named{tenant: "acme", customer: "12345", ceType: orders.RequestedType}, true},
		{"structured", structured(`{"specversion":"1.0","id":"e1","source":"/s","tenant":"acme","data":` + order + `}`),
			named{cloudEvent: true, tenant: "acme", customer: "c-1", eventID: "e1"}, true},
		{"binary", binary(order, "ce_specversion", "1.0", "ce_id", "e1", "ce_tenant", "acme"),
			named{cloudEvent: true, tenant: "acme", customer: "c-1", eventID: "e1"}, true},
		{"no customer", binary(`{"eventId":"e1","tenant":"acme","order":{}}`), named{}, false},
		{"no tenant", binary(`{"eventId":"e1","order":` + order + `}`), named{}, false},
		{"not JSON", binary(`c-1`), named{}, false},
	} {
		n, ok := ordersOnly.named(tt.m)
		if ok != tt.ok || (ok && n != tt.want) {
			t.Errorf("%s: %+v %v, want %+v %v", tt.name, n, ok, tt.want, tt.ok)
		}
	}
}

// A letter too large to keep whole keeps its start under the customer's key,
// within the limit, and says whose it is.
func TestACutLetterKeepsItsCustomerLayer(t *testing.T) {
	keys, codec := newFakeKeys(t), testCodec(t)
	pad := strings.Repeat("x", 950<<10)
	m := kafka.Message{Topic: "orders.requested", Offset: 5,
		Value: []byte(`{"eventId":"e-9","tenant":"acme","order":{"customer_id":"` + secretCustomer + `","note":"` + pad + `"}}`)}
	n, _ := ordersOnly.named(m)
	key, _ := keys.For(context.Background(), "acme", secretCustomer)
	layer := &customerLayer{key: key, named: n, at: "here", customer: []byte(secretCustomer)}
	for _, limit := range []int{maxDeadLetterBytes, 0} {
		dl, err := sealLetter(m, errors.New("too big"), "g", time.Now(), limit, codec, layer)
		if err != nil {
			t.Fatal(err)
		}
		if size := messageBytes(dl); size > max(limit, 2<<10) || bytes.Contains(rawBytes(dl), []byte(secretCustomer)) {
			t.Fatalf("limit %d: %d bytes, customer in plain %v", limit, size, bytes.Contains(rawBytes(dl), []byte(secretCustomer)))
		}
		if _, whole, err := Open(dl, codec); err != nil || whole {
			t.Fatalf("limit %d: whole %v, %v", limit, whole, err)
		}
		kept, err := codec.Open(dl.Value) // Open leaves a cut value sealed: it cannot be rebuilt
		if err != nil {
			t.Fatal(err)
		}
		plain, err := keys.Reveal(context.Background(), headerOf(dl, HeaderPersonal), string(kept))
		if err != nil || !bytes.HasPrefix(m.Value, []byte(plain)) || (limit > 0 && len(plain) < 600<<10) {
			t.Fatalf("limit %d: kept %d bytes, a prefix %v (%v)", limit, len(plain), bytes.HasPrefix(m.Value, []byte(plain)), err)
		}
		if info, err := Identify(dl, codec, NamesOf(orders.New(nil, nil))); err != nil || info.Identity.Tenant != "acme" || info.Identity.EventID != "e-9" {
			t.Fatalf("limit %d: %+v (%v)", limit, info.Identity, err)
		}
	}
}
