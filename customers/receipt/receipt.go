// Package receipt is the signed receipt of a customer's erasure: what was visited,
// what was affected, which keys were destroyed and when, signed with the
// deployment's receipt key (Ed25519) so a regulator, or the customer, can check
// it was not written after the fact by hand.
package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Version of the receipt's form.
const Version = 1

// Receipt is what an erasure did.
type Receipt struct {
	Version int    `json:"version"`
	ID      string `json:"id"` // the erasure's public ID (era_...)
	Tenant  string `json:"tenant"`
	// CustomerHash is the keyed hash of the customer's ID (hex): the customer
	// can be matched only by whoever holds the deployment's hash key.
	CustomerHash string    `json:"customer_hash"`
	ErasedAt     time.Time `json:"erased_at"`
	// Stores are the stores visited, each with what it holds now.
	Stores []Store `json:"stores"`
	// Keys are the customer's data keys destroyed: their fingerprints and times.
	Keys []Key `json:"keys"`
	// SigningKey names the key that signed (KeyID of its public key).
	SigningKey string `json:"signing_key"`
}

// Store is one store an erasure visited and the count of its entries affected.
type Store struct {
	Name string `json:"name"`
	// Affected counts the entries whose personal values are erased (made
	// unreadable, or removed); Kept says what each keeps, by law or for the ledger.
	Affected int64  `json:"affected"`
	Kept     string `json:"kept,omitempty"`
}

// Key is a destroyed data key.
type Key struct {
	ID          string    `json:"id"`
	Fingerprint string    `json:"fingerprint"`
	DestroyedAt time.Time `json:"destroyed_at"`
}

// Signed is a receipt and its signature: the Ed25519 signature of the receipt's
// canonical JSON (see Verify).
type Signed struct {
	Receipt   json.RawMessage `json:"receipt"`
	Signature string          `json:"signature"` // base64
}

// KeyID names a public key: the first 16 bytes of its SHA-256, in hex.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "ed25519:" + hex.EncodeToString(sum[:16])
}

// Sign signs r with priv, naming priv's public key in it.
func Sign(r Receipt, priv ed25519.PrivateKey) (Signed, error) {
	r.Version = Version
	r.SigningKey = KeyID(priv.Public().(ed25519.PublicKey))
	body, err := json.Marshal(r)
	if err != nil {
		return Signed{}, fmt.Errorf("encode receipt: %w", err)
	}
	return Signed{Receipt: body, Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, body))}, nil
}

// ErrForged is a receipt whose signature does not match its content or key.
var ErrForged = errors.New("receipt signature does not verify")

// Verify checks s against pub and returns its receipt. The signature is over
// the receipt's canonical JSON: its fields in this package's order, as
// encoding/json writes them (Sign's bytes). So a receipt stored where JSON is
// rewritten (PostgreSQL's jsonb reorders keys), re-indented or re-encoded still
// verifies, and a changed, added or removed value does not.
func Verify(s Signed, pub ed25519.PublicKey) (Receipt, error) {
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return Receipt{}, fmt.Errorf("%w: malformed signature", ErrForged)
	}
	var r Receipt
	dec := json.NewDecoder(bytes.NewReader(s.Receipt))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		// A field no receipt has was added after signing: as forged as a changed one.
		return Receipt{}, fmt.Errorf("%w: %w", ErrForged, err)
	}
	canonical, err := json.Marshal(r)
	if err != nil {
		return Receipt{}, fmt.Errorf("receipt: %w", err)
	}
	if !ed25519.Verify(pub, canonical, sig) {
		return Receipt{}, ErrForged
	}
	if r.SigningKey != KeyID(pub) {
		return Receipt{}, fmt.Errorf("%w: signed by %s, checked with %s", ErrForged, r.SigningKey, KeyID(pub))
	}
	return r, nil
}

// PublicKey is how the deployment publishes its receipt key: base64 of the raw
// 32 bytes, with its ID.
type PublicKey struct {
	ID  string `json:"id"`
	Key string `json:"key"`
}

// Publish is pub as published.
func Publish(pub ed25519.PublicKey) PublicKey {
	return PublicKey{ID: KeyID(pub), Key: base64.StdEncoding.EncodeToString(pub)}
}

// Parse reads a published key.
func (p PublicKey) Parse() (ed25519.PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(p.Key)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, errors.New("receipt key: want 32 bytes in base64")
	}
	pub := ed25519.PublicKey(raw)
	if p.ID != "" && p.ID != KeyID(pub) {
		return nil, fmt.Errorf("receipt key: its id %s is not its key's (%s)", p.ID, KeyID(pub))
	}
	return pub, nil
}
