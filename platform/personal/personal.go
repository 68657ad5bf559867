// Package personal seals a customer's personal data under a data key of the
// customer's own, so that destroying that one key erases the data wherever a copy
// went: rows, Temporal histories, stored answers, backups (crypto-shredding).
//
// A sealed value is a string, "pd1.{key ID}.{base64url(nonce|AES-256-GCM)}", so it
// fits wherever the plain value did (a text column, a JSON string, a workflow's
// input); the tenant and the key ID are authenticated with it, so a value cannot be
// moved to another tenant's row or relabelled to another key.
package personal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// prefix begins every sealed value.
const prefix = "pd1."

// ErrErased is a value sealed under a key that was destroyed: the customer was
// erased.
var ErrErased = errors.New("personal data erased")

// Erased is what a reader shows in place of an erased value.
const Erased = "[erased]"

// KeyIDPattern is the form of a data key's ID.
var KeyIDPattern = regexp.MustCompile(`^ck_[0-9a-f]{32}$`)

// Key is one customer's data key.
type Key struct {
	ID     string
	Tenant string
	aead   cipher.AEAD
	nonces []byte // derives SealAt's nonces
}

// NewKey is the key id of tenant with the 32 bytes of raw.
func NewKey(id, tenant string, raw []byte) (Key, error) {
	if !KeyIDPattern.MatchString(id) {
		return Key{}, fmt.Errorf("data key id %q: want ck_ and 32 hex digits", id)
	}
	if len(raw) != 32 {
		return Key{}, fmt.Errorf("data key %s: want 32 bytes, have %d", id, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return Key{}, fmt.Errorf("data key %s: %w", id, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, fmt.Errorf("data key %s: %w", id, err)
	}
	m := hmac.New(sha256.New, raw)
	m.Write([]byte("orderflow nonce key"))
	return Key{ID: id, Tenant: tenant, aead: aead, nonces: m.Sum(nil)}, nil
}

// NewKeyID is a fresh, random key ID.
func NewKeyID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return "ck_" + hex.EncodeToString(b)
}

// NewRaw is 32 fresh random bytes for a data key.
func NewRaw() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

// Seal seals plain under k. The empty string stays empty: there is nothing to hide.
func (k Key) Seal(plain string) string {
	if plain == "" {
		return ""
	}
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return k.seal(plain, nonce)
}

// SealAt seals plain as Seal does, with a nonce derived from where the value
// belongs (at: a workflow's ID and the field) and the value itself: sealing the
// same value for the same place twice (a retried request) gives the same string,
// and two different values never share a nonce.
func (k Key) SealAt(plain, at string) string {
	if plain == "" {
		return ""
	}
	m := hmac.New(sha256.New, k.nonces)
	// at's length, not a separator: at and plain may hold any byte.
	m.Write(binary.AppendUvarint(nil, uint64(len(at))))
	m.Write([]byte(at))
	m.Write([]byte(plain))
	return k.seal(plain, m.Sum(nil)[:k.aead.NonceSize()])
}

func (k Key) seal(plain string, nonce []byte) string {
	sealed := k.aead.Seal(nonce[:len(nonce):len(nonce)], nonce, []byte(plain), k.ad())
	return prefix + k.ID + "." + base64.RawURLEncoding.EncodeToString(sealed)
}

// Open opens a value Seal sealed under k.
func (k Key) Open(sealed string) (string, error) {
	id, body, ok := split(sealed)
	if !ok {
		return "", errors.New("open personal value: not sealed")
	}
	if id != k.ID {
		return "", fmt.Errorf("open personal value: sealed under %s, not %s", id, k.ID)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < k.aead.NonceSize() {
		return "", errors.New("open personal value: malformed")
	}
	plain, err := k.aead.Open(nil, raw[:k.aead.NonceSize()], raw[k.aead.NonceSize():], k.ad())
	if err != nil {
		return "", fmt.Errorf("open personal value under %s: %w", k.ID, err)
	}
	return string(plain), nil
}

// ad binds a sealed value to its tenant and key.
func (k Key) ad() []byte { return []byte(k.Tenant + "\x00" + k.ID) }

// Fingerprint names the key's material without revealing it: a receipt shows it.
func (k Key) Fingerprint(raw []byte) string {
	sum := sha256.Sum256(append([]byte("orderflow data key\x00"+k.ID+"\x00"), raw...))
	return hex.EncodeToString(sum[:16])
}

// IsSealed reports whether s is a sealed value.
func IsSealed(s string) bool { _, _, ok := split(s); return ok }

// KeyID is the ID of the key s is sealed under.
func KeyID(s string) (string, bool) {
	id, _, ok := split(s)
	return id, ok
}

func split(s string) (id, body string, ok bool) {
	rest, found := strings.CutPrefix(s, prefix)
	if !found {
		return "", "", false
	}
	id, body, ok = strings.Cut(rest, ".")
	return id, body, ok && KeyIDPattern.MatchString(id) && body != ""
}

// Hasher derives the keyed hash of a customer: what rows keep to find a
// customer's data (GET /v1/orders?customer_id=) and what stays after erasure.
// Without the hash key, the hash of a guessed ID cannot be computed to confirm it.
type Hasher struct{ key []byte }

// NewHasher is the hasher of a 32-byte secret.
func NewHasher(key []byte) (Hasher, error) {
	if len(key) != 32 {
		return Hasher{}, fmt.Errorf("customer hash key: want 32 bytes, have %d", len(key))
	}
	return Hasher{key: key}, nil
}

// Hash is the keyed hash of (tenant, customer): 32 bytes.
func (h Hasher) Hash(tenant, customer string) []byte {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(tenant))
	m.Write([]byte{0})
	m.Write([]byte(customer))
	return m.Sum(nil)
}

// Derive is a secret of its own for label, derived from the hash key.
func (h Hasher) Derive(label string) []byte {
	// A tenant's name never begins with 0xff (tenants.Valid), so no customer's
	// hash, which is shown, is a derived secret, which is not.
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("\xffderive\x00" + label))
	return m.Sum(nil)
}

// Hex is the hash of (tenant, customer) in hex, as receipts and operators show it.
func (h Hasher) Hex(tenant, customer string) string {
	return hex.EncodeToString(h.Hash(tenant, customer))
}
