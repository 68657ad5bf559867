package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/platform/personal"
	"github.com/orderflow/orderflow/tenants"
)

// CustomerKeys are customers' data keys (*custkeys.Store).
type CustomerKeys interface {
	For(ctx context.Context, tenant, customer string) (personal.Key, error)
	Hasher() personal.Hasher
}

// Execer runs a statement (*pgxpool.Pool).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Customers seals the dead letter of an event that names a customer under the
// customer's data key, inside the deployment's keys, and records the letter in
// customer_letters: a letter cannot be deleted from Kafka, so erasing the
// customer (destroying the key) is what erases it, and the erasure counts it.
type Customers struct {
	keys CustomerKeys
	db   Execer
}

// NewCustomers seals dead letters under keys and records them in db.
func NewCustomers(db Execer, keys CustomerKeys) *Customers {
	return &Customers{keys: keys, db: db}
}

// customerLayer seals what one dead letter holds of its customer: its value,
// and any key, header or identity text that names the customer. A nil layer
// seals nothing: the letter's customer could not be read.
type customerLayer struct {
	key      personal.Key
	named    named
	at       string // the letter's provenance, which makes sealing deterministic
	customer []byte
}

// named is whom a message speaks for, read leniently from a poison message.
type named struct {
	tenant, customer string
	eventID          string // an envelope's eventId or a CloudEvent's id
	ceType           string // the type of the kind it carries; "" when unknown
	cloudEvent       bool
}

// customerLayer is the layer m's dead letter is sealed in: nil when m names no
// customer of a tenant that exists, or the consumer has no customer keys.
func (c *Consumer) customerLayer(ctx context.Context, m kafka.Message) (*customerLayer, error) {
	cs := c.opts.Customers
	if cs == nil {
		return nil, nil
	}
	n, ok := c.decoder.named(m)
	if !ok {
		return nil, nil
	}
	// A tenant no one holds has no customers to erase: its letters stay as
	// they were, and a producer cannot make keys for made-up tenants.
	known, err := c.tenants.Exists(ctx, n.tenant)
	if err != nil || !known {
		return nil, err
	}
	key, err := cs.keys.For(ctx, n.tenant, n.customer)
	if err != nil {
		return nil, fmt.Errorf("data key of a dead letter's customer: %w", err)
	}
	at := fmt.Sprintf("dlq\x00%s\x00%d\x00%d\x00%s", m.Topic, m.Partition, m.Offset, c.opts.Group)
	return &customerLayer{key: key, named: n, at: at, customer: []byte(n.customer)}, nil
}

// record notes the letter in customer_letters before it is written, so an
// erasure never misses one (a letter whose write then fails for good is counted
// though absent: the safer error).
func (cs *Customers) record(ctx context.Context, l *customerLayer, m kafka.Message) error {
	event := l.named.eventID
	if event == "" { // a poison message may name no event: its place does
		event = fmt.Sprintf("%d@%d", m.Partition, m.Offset)
	}
	hash := cs.keys.Hasher().Hash(l.named.tenant, l.named.customer)
	_, err := cs.db.Exec(ctx, `INSERT INTO customer_letters (tenant, customer_hash, topic, event_id, key_id)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, l.named.tenant, hash, m.Topic, event, l.key.ID)
	if err != nil {
		return fmt.Errorf("record the dead letter of a customer of %s: %w", l.named.tenant, err)
	}
	return nil
}

// value seals v under the customer's key; as it is with no layer.
func (l *customerLayer) value(v []byte) []byte {
	if l == nil {
		return v
	}
	return []byte(l.key.SealAt(string(v), l.at+"\x00value"))
}

// text seals s, found at what, when it names the customer: a key or a header a
// producer chose may hold the customer's ID.
func (l *customerLayer) text(s []byte, what string) []byte {
	if l == nil || !bytes.Contains(s, l.customer) {
		return s
	}
	return []byte(l.key.SealAt(string(s), l.at+"\x00"+what))
}

// headers are m's headers, those that name the customer sealed.
func (l *customerLayer) headers(hs []kafka.Header) []kafka.Header {
	out := slices.Clone(hs)
	for i, h := range out {
		out[i].Value = l.text(h.Value, "header\x00"+h.Key)
	}
	return out
}

// reason is an error's text without the customer's ID, which a validation
// message may quote.
func (l *customerLayer) reason(s string) string {
	if l == nil {
		return s
	}
	return strings.ReplaceAll(s, l.named.customer, "[customer]")
}

// provenance is what a reader needs of a sealed letter without opening it:
// the key's tenant (HeaderPersonal), and whom the letter speaks for in the
// dlq.ce_* headers, as a cut structured CloudEvent's letter says it (an
// envelope's eventId as the id and its kind's CloudEvent type as the type).
// A structured CloudEvent's are there already (structuredProvenance).
func (l *customerLayer) provenance() []kafka.Header {
	if l == nil {
		return nil
	}
	hs := []kafka.Header{{Key: HeaderPersonal, Value: []byte(l.named.tenant)}}
	if l.named.cloudEvent {
		return hs
	}
	return append(hs,
		kafka.Header{Key: "dlq.ce_id", Value: l.text([]byte(truncate(l.named.eventID, 1024)), "dlq.ce_id")},
		kafka.Header{Key: "dlq.ce_type", Value: []byte(l.named.ceType)},
		kafka.Header{Key: "dlq.ce_" + TenantAttribute, Value: []byte(l.named.tenant)})
}

// named reads, leniently, whom m speaks for: its tenant and the customer_id of
// its request, in any shape the decoder takes (an envelope's member, a
// CloudEvent's data, structured or binary). ok is false when either is
// missing: such a letter is sealed as before.
func (d *Decoder) named(m kafka.Message) (named, bool) {
	var n named
	switch {
	case hasHeader(m.Headers, ceHeaderPrefix+"specversion"):
		n = named{cloudEvent: true, customer: customerIn(m.Value)}
		n.tenant, _ = header(m.Headers, ceHeaderPrefix+TenantAttribute)
		n.eventID, _ = header(m.Headers, ceHeaderPrefix+"id")
	case isStructured(m):
		var ce struct {
			ID     string          `json:"id"`
			Tenant string          `json:"tenant"`
			Data   json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal(m.Value, &ce) // a poison value may be anything
		n = named{cloudEvent: true, tenant: ce.Tenant, eventID: ce.ID, customer: customerIn(ce.Data)}
	default:
		n = d.namedEnvelope(m.Value)
	}
	return n, tenants.Valid(n.tenant) && n.customer != ""
}

// namedEnvelope reads an envelope: its tenant, eventId, the kind its members
// name (one known kind's, else none) and the first member's customer_id.
func (d *Decoder) namedEnvelope(value []byte) named {
	var members map[string]json.RawMessage
	_ = json.Unmarshal(value, &members)
	var n named
	_ = json.Unmarshal(members["tenant"], &n.tenant)
	_ = json.Unmarshal(members["eventId"], &n.eventID)
	kinds := 0
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if name == "tenant" || name == "eventId" || string(members[name]) == "null" {
			continue
		}
		if k := d.byField(name); k != nil {
			kinds++
			n.ceType = k.Envelope().CloudEventType
		}
		if n.customer == "" {
			n.customer = customerIn(members[name])
		}
	}
	if kinds != 1 { // as identityOf reads it: two kinds' members name no kind
		n.ceType = ""
	}
	return n
}

// customerIn is the customer_id of a request, "" when it has none; a number
// (poison: the decoder wants a string) names its customer too.
func customerIn(request []byte) string {
	var r struct {
		CustomerID json.RawMessage `json:"customer_id"`
	}
	if json.Unmarshal(request, &r) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(r.CustomerID, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(r.CustomerID, &n) == nil {
		return n.String()
	}
	return ""
}

func hasHeader(hs []kafka.Header, key string) bool {
	_, ok := header(hs, key)
	return ok
}

// Revealer opens values sealed under a customer's data key (*custkeys.Store);
// personal.ErrErased once the customer was erased.
type Revealer interface {
	Reveal(ctx context.Context, tenant, value string) (string, error)
}

// ErrLocked is a letter sealed under a customer's key read without the
// customer keys.
var ErrLocked = errors.New("dead letter sealed under its customer's data key: the customer keys (DATABASE_URL) are needed to open it")

// Reveal opens what the dead letter dl sealed under its customer's key in out,
// the message Open rebuilt from it: its value, and its key and headers that
// named the customer. A letter of an erased customer comes back with
// personal.Erased in their place, and erased true; a letter not sealed so comes
// back as it is.
func Reveal(ctx context.Context, dl, out kafka.Message, customers Revealer) (revealed kafka.Message, erased bool, err error) {
	tenant, ok := header(dl.Headers, HeaderPersonal)
	if !ok {
		return out, false, nil
	}
	if customers == nil {
		return kafka.Message{}, false, ErrLocked
	}
	open := func(b []byte) ([]byte, error) {
		if !personal.IsSealed(string(b)) {
			return b, nil
		}
		v, err := customers.Reveal(ctx, tenant, string(b))
		if errors.Is(err, personal.ErrErased) {
			erased = true
			return []byte(personal.Erased), nil
		}
		return []byte(v), err
	}
	revealed = kafka.Message{Headers: make([]kafka.Header, len(out.Headers))}
	if revealed.Value, err = open(out.Value); err == nil {
		revealed.Key, err = open(out.Key)
	}
	for i, h := range out.Headers {
		revealed.Headers[i].Key = h.Key
		if err == nil {
			revealed.Headers[i].Value, err = open(h.Value)
		}
	}
	if err != nil {
		return kafka.Message{}, false, fmt.Errorf("open dead letter %d:%d under its customer's key: %w", dl.Partition, dl.Offset, err)
	}
	return revealed, erased, nil
}
