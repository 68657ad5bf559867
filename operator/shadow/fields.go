package shadow

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// moneyField reports whether an activity input field called name is compared:
// the fields whose value decides what money moves and where. They are the
// provider's idempotency keys (key, confirmkey, idempotencykey), the amount and
// currency, and the target (orderid, tenant, intentid, paymentmethod). A field of
// one of these names (case-insensitive), at any depth of an activity's input,
// must be the same when this build replays a history as it was when the history
// was written; every other field may change. This is the only list.
func moneyField(name string) (field, bool) {
	switch strings.ToLower(name) {
	case "key", "confirmkey", "idempotencykey", "amount", "currency", "intentid", "orderid", "tenant":
		return field{}, true
	case "paymentmethod": // the card token
		return field{secret: true}, true
	}
	return field{}, false
}

// field is how a money field is shown: a secret one only as a digest, so a
// report never carries it.
type field struct{ secret bool }

// show is a value as a report shows it.
func (f field) show(v string) string {
	if !f.secret || v == absent {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "sha256:" + hex.EncodeToString(sum[:6])
}
