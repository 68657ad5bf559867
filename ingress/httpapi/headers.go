package httpapi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/orderflow/orderflow/platform/identity"
)

// Errors of ParseIdempotencyKey.
var (
	errKeyMissing   = errors.New("the Idempotency-Key header is required")
	errKeyMultiple  = errors.New("more than one Idempotency-Key")
	errKeyMalformed = fmt.Errorf("Idempotency-Key must be 1-%d visible ASCII characters, bare or as a quoted string", identity.MaxKeyLen)
)

// ParseIdempotencyKey accepts the draft's Structured Field form (an sf-string,
// `"8e03..."`) and the bare form Stripe clients send. Either way the key is a
// client's key (identity.CheckKey); a bare one holds no quote. Several header fields, or a list in one, are refused.
func ParseIdempotencyKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", errKeyMissing
	case 1:
	default:
		return "", errKeyMultiple
	}
	v := strings.Trim(values[0], " \t")
	if v == "" {
		return "", errKeyMissing
	}
	var key string
	if v[0] == '"' {
		var rest string
		var ok bool
		key, rest, ok = parseSFString(v)
		if !ok {
			return "", errKeyMalformed
		}
		if rest = strings.TrimLeft(rest, " \t"); rest != "" {
			if rest[0] == ',' {
				return "", errKeyMultiple
			}
			return "", errKeyMalformed
		}
	} else {
		if strings.IndexByte(v, ',') >= 0 {
			return "", errKeyMultiple
		}
		key = v
	}
	if identity.CheckKey(key) != "" || (v[0] != '"' && strings.IndexByte(key, '"') >= 0) {
		return "", errKeyMalformed
	}
	return key, nil
}

// parseSFString parses an RFC 8941 sf-string at the start of s and returns its
// value and what follows it.
func parseSFString(s string) (value, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i == len(s) || (s[i] != '"' && s[i] != '\\') {
				return "", "", false
			}
			b.WriteByte(s[i])
		case c == '"':
			return b.String(), s[i+1:], true
		case c < 0x20 || c > 0x7e:
			return "", "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

// MaxWait caps Prefer: wait.
const MaxWait = 30

// parsePreferWait returns N of RFC 7240 `Prefer: wait=N`, capped at MaxWait; an
// absent or unusable preference is 0 (preferences may be ignored).
func parsePreferWait(values []string) int {
	for _, v := range values {
		for _, pref := range strings.Split(v, ",") {
			name, val, ok := strings.Cut(strings.TrimSpace(strings.SplitN(pref, ";", 2)[0]), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(val), `"`))
			if err != nil || n < 0 {
				return 0
			}
			return min(n, MaxWait)
		}
	}
	return 0
}
