package identity

import "strconv"

// MaxKeyLen bounds a client's key, an HTTP Idempotency-Key or an event's eventId:
// the bound the payment provider sets on its own idempotency keys.
const MaxKeyLen = 255

// CheckKey says why key is not a client's key ("" when it is): a key is 1 to
// MaxKeyLen visible ASCII characters.
func CheckKey(key string) string {
	switch {
	case key == "":
		return "is required"
	case len(key) > MaxKeyLen:
		return "longer than " + strconv.Itoa(MaxKeyLen) + " characters"
	case !VisibleString(key):
		return "must be visible ASCII characters"
	}
	return ""
}

// VisibleString reports whether s holds only visible ASCII characters (0x21 to
// 0x7e).
func VisibleString(s string) bool {
	for i := 0; i < len(s); i++ {
		if !Visible(s[i]) {
			return false
		}
	}
	return true
}

// EffectKey is the idempotency key of an effect a kind's workflow asks of an
// outside service (a booking, a charge): derived from the workflow ID and the
// effect, never from the attempt or the run, so every retry, reset and replay
// sends the same one; gen counts deliberate new attempts (0 first). It is 52
// characters whatever the workflow ID. Orders' payments keep their own
// (order.PaymentKey), which running workflows already sent.
func EffectKey(workflowID, effect string, gen int) string {
	return "ofkey_" + Lower(Digest("effect", workflowID, effect, strconv.Itoa(gen)))[:46]
}
