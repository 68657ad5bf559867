package order

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// An order's identity is derived, never stored apart from the order: the tenant and
// the client's key (an HTTP Idempotency-Key or an event's eventId) give the workflow
// ID, and the workflow ID gives the public order ID, the outbound event IDs and the
// payment provider's idempotency keys. The same input gives the same identity on
// every retry, in every process.

var tenantPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidTenant reports whether name is a tenant name: lower-case letters, digits, '-'
// and '_', at most 63 characters. It never holds ':' or '%', which WorkflowID relies on.
func ValidTenant(name string) bool { return tenantPattern.MatchString(name) }

// Source is the ingress a client's key comes from. Each has its own ID space, so an
// Idempotency-Key that equals an eventId of the same tenant is another order.
type Source string

const (
	// FromHTTP: the key is an HTTP Idempotency-Key.
	FromHTTP Source = "http"
	// FromEvent: the key is an event's eventId.
	FromEvent Source = "event"
	// FromCloudEvent: the key is CloudEventKey of a CloudEvent's source and id,
	// which together identify it (CloudEvents 1.0, "id").
	FromCloudEvent Source = "ce"
)

// CloudEventKey is the key of the CloudEvent that source and id name: a digest of
// the pair, so any source URI and id give a key of the same short form, and equal
// pairs the same key.
func CloudEventKey(source, id string) string {
	return lower(digest("cloudevent", source, id)[:32])
}

// WorkflowID is order:{tenant}:{eventId} for an event, order:{tenant}:http:{key}
// for an HTTP request and order:{tenant}:ce:{key} for a CloudEvent. Tenant names cannot hold ':' or '%'; in the key, '%', ':' and
// anything outside visible ASCII are percent-encoded, so no key of one tenant or
// source can produce another's ID (the "http:" and "ce:" segments' colons are never
// escaped).
// Events keep the scheme that predates sources, so a redelivery across an upgrade
// finds its workflow. Tenants and client keys only: no personal data goes into IDs,
// which Temporal stores in plain text.
func WorkflowID(tenant string, src Source, key string) string {
	var b strings.Builder
	b.Grow(len("order:") + len(tenant) + len(":http:") + len(key))
	b.WriteString("order:")
	b.WriteString(tenant)
	b.WriteByte(':')
	switch src {
	case FromEvent:
	case FromCloudEvent:
		b.WriteString("ce:")
	default:
		b.WriteString("http:")
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '%' || c == ':' || !visible(c) {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// IDFor derives the public order ID from its workflow ID: stable across retries and
// free of the tenant's or client's data.
func IDFor(workflowID string) string {
	return "ord_" + lower(digest("order", workflowID)[:26])
}

// EventID derives the ID of an outbound event, the same on every attempt to publish it.
func EventID(workflowID, eventType string) string {
	return "evt_" + lower(digest("event", workflowID, eventType)[:26])
}

// PaymentKey is the idempotency key sent to the payment provider for one operation
// ("charge", "refund") of one order: derived from the business identity and a
// generation (0, then 1, 2... only for a deliberate new attempt after a lookup found
// that the previous key charged nothing), never from the attempt or run. It is 52
// characters whatever the client's key, well under the provider's 255.
func PaymentKey(workflowID, op string, generation int) string {
	return "ofpay_" + lower(digest("payment", workflowID, op, strconv.Itoa(generation)))[:46]
}

// LegacyPaymentKey is the key of workflows started before PaymentKey: it carries the
// workflow ID, so a long client key made it longer than the provider accepts.
func LegacyPaymentKey(workflowID, op string) string {
	return workflowID + "/" + op
}

// Fingerprint identifies an order's content: a version byte (1), then a SHA-256 of
// the canonical request: customer_id, currency, the item count and each item's
// sku, quantity, unit_amount, then payment_method, each as
// len(name):name=len(value):value;. A field added later joins only when set, so a
// fingerprint stays stable across deploys.
func Fingerprint(customerID, currency string, items []Item, paymentMethod string) []byte {
	// The bytes of "%d:%s=%d:%s;" per field, appended instead of formatted: a
	// POST and each replay hash them.
	buf := make([]byte, 0, 128+64*len(items))
	field := func(name, v string) {
		buf = strconv.AppendInt(buf, int64(len(name)), 10)
		buf = append(append(append(buf, ':'), name...), '=')
		buf = strconv.AppendInt(buf, int64(len(v)), 10)
		buf = append(append(append(buf, ':'), v...), ';')
	}
	field("customer_id", customerID)
	field("currency", currency)
	field("items", strconv.Itoa(len(items)))
	for _, it := range items {
		field("sku", it.SKU)
		field("quantity", strconv.FormatInt(it.Quantity, 10))
		field("unit_amount", strconv.FormatInt(it.UnitAmount, 10))
	}
	field("payment_method", paymentMethod)
	sum := sha256.Sum256(buf)
	return append([]byte{FingerprintVersion}, sum[:]...)
}

// FingerprintVersion is the first byte of every Fingerprint, so a stored one says
// how it was made.
const FingerprintVersion = 1

// Fingerprint of the order's content.
func (o Order) Fingerprint() []byte {
	return Fingerprint(o.CustomerID, o.Currency, o.Items, o.PaymentMethod)
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

func digest(parts ...string) string {
	var buf []byte
	for _, p := range parts {
		// Length-prefixed, so ("ab","c") and ("a","bc") differ: "%d:%s;".
		buf = strconv.AppendInt(buf, int64(len(p)), 10)
		buf = append(append(append(buf, ':'), p...), ';')
	}
	sum := sha256.Sum256(buf)
	return b32.EncodeToString(sum[:])
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
