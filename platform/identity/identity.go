// Package identity derives a workflow's identity from a client's key, the same way
// for every workflow kind: the tenant, the kind and the key (an HTTP
// Idempotency-Key, an event's eventId, a CloudEvent's source and id) give the
// workflow ID, and the workflow ID gives the public ID. The same input gives the
// same identity on every retry, in every process; no personal data goes into it.
package identity

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
)

// Source is the ingress a client's key comes from. Each has its own ID space, so an
// Idempotency-Key that equals an eventId of the same tenant names another workflow.
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
	return Lower(Digest("cloudevent", source, id)[:32])
}

// WorkflowID is {kind}:{tenant}:{eventId} for an event, {kind}:{tenant}:http:{key}
// for an HTTP request and {kind}:{tenant}:ce:{key} for a CloudEvent. Kind and
// tenant names cannot hold ':' or '%'; in the key, '%', ':' and anything outside
// visible ASCII are percent-encoded, so no key of one kind, tenant or source can
// produce another's ID (the "http:" and "ce:" segments' colons are never escaped).
func WorkflowID(kind, tenant string, src Source, key string) string {
	var b strings.Builder
	b.Grow(len(kind) + len(tenant) + len("::http:") + len(key))
	b.WriteString(kind)
	b.WriteByte(':')
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
		if c == '%' || c == ':' || !Visible(c) {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// PublicID derives the public ID of a kind's workflow: prefix, then 26 characters
// of a digest of the kind and the workflow ID. Stable across retries, and free of
// the tenant's or client's data.
func PublicID(prefix, kind, workflowID string) string {
	return prefix + Lower(Digest(kind, workflowID)[:26])
}

// StoredKey is how a kind's key is kept in the ingresses' dedup tables
// (idempotency_keys, processed_events): "{kind} {key}", and the bare key for the
// first kind, orders, whose rows predate kinds. A client's key never holds a space
// (visible ASCII only), so no key of one kind can be taken for another's, and the
// tables need no new column.
func StoredKey(kind, key string) string {
	if kind == "" || kind == "order" {
		return key
	}
	return kind + " " + key
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// Digest is a SHA-256 of the length-prefixed parts ("%d:%s;" each, so ("ab","c")
// and ("a","bc") differ), in base32.
func Digest(parts ...string) string {
	var buf []byte
	for _, p := range parts {
		buf = strconv.AppendInt(buf, int64(len(p)), 10)
		buf = append(append(append(buf, ':'), p...), ';')
	}
	sum := sha256.Sum256(buf)
	return b32.EncodeToString(sum[:])
}

// Lower is s with ASCII upper-case letters made lower-case.
func Lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Visible reports whether c is visible ASCII (0x21 to 0x7e).
func Visible(c byte) bool { return c >= 0x21 && c <= 0x7e }

// Fields builds a request's fingerprint, the same way for every kind: each field
// as len(name):name=len(value):value; in a fixed order, hashed with SHA-256 behind
// a version byte. A field a kind adds later joins only when set, so a fingerprint
// stays stable across deploys.
type Fields struct{ buf []byte }

// NewFields is a fingerprint of about size bytes of fields.
func NewFields(size int) *Fields { return &Fields{buf: make([]byte, 0, size)} }

// Add appends one field.
func (f *Fields) Add(name, value string) {
	f.buf = strconv.AppendInt(f.buf, int64(len(name)), 10)
	f.buf = append(append(append(f.buf, ':'), name...), '=')
	f.buf = strconv.AppendInt(f.buf, int64(len(value)), 10)
	f.buf = append(append(append(f.buf, ':'), value...), ';')
}

// Sum is the fingerprint: version, then the SHA-256 of the fields.
func (f *Fields) Sum(version byte) []byte {
	sum := sha256.Sum256(f.buf)
	return append([]byte{version}, sum[:]...)
}
