package order

import (
	"strconv"

	"github.com/orderflow/orderflow/internal/identity"
)

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
	case !Visible(key):
		return "must be visible ASCII characters"
	}
	return ""
}

// Visible reports whether s holds only visible ASCII characters (0x21 to 0x7e).
func Visible(s string) bool {
	for i := 0; i < len(s); i++ {
		if !identity.Visible(s[i]) {
			return false
		}
	}
	return true
}
