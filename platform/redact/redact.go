// Package redact removes what a thief would want from text bound for logs, order
// failures, events and dead letters: payment method and card tokens, customer IDs,
// client secrets, API keys and card numbers.
package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// secret matches the provider's secret-bearing identifiers and anything that
// looks like a card number. Object IDs that hold no secret (pi_, ch_, re_) stay.
var secret = regexp.MustCompile(`\b(?:(?:pi|seti)_[A-Za-z0-9]+_secret_[A-Za-z0-9]+|(?:pm|tok|card|src|cus|ba|btok|seti|sk_live|sk_test|rk_live|rk_test|whsec|of)_[A-Za-z0-9_]+|\d(?:[ -]?\d){12,18})\b`)

// cardNumber is what kind calls a card number.
const cardNumber = "number"

// Secrets returns s with each secret replaced by its kind and a short digest
// (pm_…#1a2b3c4d): enough for an operator to match it against a value they hold,
// never the value. A card number gets no digest (number…): its BIN and last four
// leave about 10^8 candidates, few enough to hash them all.
func Secrets(s string) string {
	return secret.ReplaceAllStringFunc(s, func(m string) string {
		k := kind(m)
		if k == cardNumber {
			return k + "…"
		}
		sum := sha256.Sum256([]byte(m))
		return k + "…#" + hex.EncodeToString(sum[:4])
	})
}

// kind is the prefix that names what m is: "pm_", "pi_123_secret_", "number".
func kind(m string) string {
	if i := strings.Index(m, "_secret_"); i >= 0 {
		return m[:i+len("_secret_")]
	}
	if i := strings.IndexByte(m, '_'); i >= 0 {
		return m[:i+1]
	}
	return cardNumber
}
