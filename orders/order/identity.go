package order

import (
	"strconv"

	"github.com/orderflow/orderflow/platform/identity"
)

// An order's identity is derived, never stored apart from the order: the tenant and
// the client's key (an HTTP Idempotency-Key or an event's eventId) give the workflow
// ID, and the workflow ID gives the public order ID, the outbound event IDs and the
// payment provider's idempotency keys. The same input gives the same identity on
// every retry, in every process.

// Source is the ingress a client's key comes from (identity.Source).
type Source = identity.Source

// The sources of a key.
const (
	FromHTTP       = identity.FromHTTP
	FromEvent      = identity.FromEvent
	FromCloudEvent = identity.FromCloudEvent
)

// Kind is the name of the order kind: it begins each order's workflow ID.
const Kind = "order"

// CloudEventKey is the key of the CloudEvent that source and id name
// (identity.CloudEventKey).
func CloudEventKey(source, id string) string { return identity.CloudEventKey(source, id) }

// WorkflowID is identity.WorkflowID of the order kind: order:{tenant}:{eventId} for
// an event, order:{tenant}:http:{key} for an HTTP request and
// order:{tenant}:ce:{key} for a CloudEvent. Events keep the scheme that predates
// sources, so a redelivery across an upgrade finds its workflow.
func WorkflowID(tenant string, src Source, key string) string {
	return identity.WorkflowID(Kind, tenant, src, key)
}

// IDFor derives the public order ID from its workflow ID: stable across retries and
// free of the tenant's or client's data.
func IDFor(workflowID string) string {
	return identity.PublicID("ord_", Kind, workflowID)
}

// EventID derives the ID of an outbound event, the same on every attempt to publish it.
func EventID(workflowID, eventType string) string {
	return "evt_" + identity.Lower(identity.Digest("event", workflowID, eventType)[:26])
}

// PaymentKey is the idempotency key sent to the payment provider for one operation
// ("charge", "refund") of one order: derived from the business identity and a
// generation (0, then 1, 2... only for a deliberate new attempt after a lookup found
// that the previous key charged nothing), never from the attempt or run. It is 52
// characters whatever the client's key, well under the provider's 255.
func PaymentKey(workflowID, op string, generation int) string {
	return "ofpay_" + identity.Lower(identity.Digest("payment", workflowID, op, strconv.Itoa(generation)))[:46]
}

// Fingerprint identifies an order's content: a version byte (1), then a SHA-256 of
// the canonical request: customer_id, currency, the item count and each item's
// sku, quantity, unit_amount, then payment_method, each as
// len(name):name=len(value):value;. A field added later joins only when set, so a
// fingerprint stays stable across deploys.
func Fingerprint(customerID, currency string, items []Item, paymentMethod string) []byte {
	f := identity.NewFields(128 + 64*len(items))
	f.Add("customer_id", customerID)
	f.Add("currency", currency)
	f.Add("items", strconv.Itoa(len(items)))
	for _, it := range items {
		f.Add("sku", it.SKU)
		f.Add("quantity", strconv.FormatInt(it.Quantity, 10))
		f.Add("unit_amount", strconv.FormatInt(it.UnitAmount, 10))
	}
	f.Add("payment_method", paymentMethod)
	return f.Sum(FingerprintVersion)
}

// FingerprintVersion is the first byte of every Fingerprint, so a stored one says
// how it was made.
const FingerprintVersion = 1

// Fingerprint of the order's content: the plain request's, taken before its
// personal values were sealed.
func (o Order) Fingerprint() []byte {
	if len(o.Print) > 0 {
		return o.Print
	}
	return Fingerprint(o.CustomerID, o.Currency, o.Items, o.PaymentMethod)
}
