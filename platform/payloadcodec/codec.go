// Package payloadcodec encrypts every payload orderflow hands to Temporal (workflow
// inputs and results, activity arguments, failure messages), so the card token and
// customer id of an order are not readable in Temporal's history or database.
//
// A payload is serialized, compressed, then sealed with AES-256-GCM under the
// keyring's writing key; the key's ID rides in the payload's metadata, so a key
// that no longer writes still reads what it wrote. Payloads without this encoding
// (histories written before encryption) pass through unchanged.
package payloadcodec

import (
	"bytes"
	"compress/flate"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Metadata of an encrypted payload.
const (
	Encoding    = "binary/encrypted"
	MetaKeyID   = "encryption-key-id"
	MetaCipher  = "encryption-cipher"
	cipherValue = "AES256-GCM+deflate"
)

// Keyring holds the keys that decrypt, by ID, and the one that encrypts.
type Keyring struct {
	writer string
	keys   map[string]cipher.AEAD
}

var keyID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParseKeyring reads "id:base64key[,id:base64key...]": every key decrypts, the
// first one also encrypts. Keys are 32 bytes (AES-256), in standard base64.
func ParseKeyring(spec string) (*Keyring, error) {
	r := &Keyring{keys: map[string]cipher.AEAD{}}
	for i, entry := range strings.Split(spec, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok || !keyID.MatchString(id) {
			return nil, fmt.Errorf("payload key %d: want id:base64key with an id of letters, digits, '.', '_' or '-'", i+1)
		}
		if _, dup := r.keys[id]; dup {
			return nil, fmt.Errorf("payload key %q listed twice", id)
		}
		key, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("payload key %q: want 32 bytes in base64 (openssl rand -base64 32)", id)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("payload key %q: %w", id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("payload key %q: %w", id, err)
		}
		r.keys[id] = aead
		if i == 0 {
			r.writer = id
		}
	}
	return r, nil
}

// WriterID is the ID of the key that encrypts.
func (r *Keyring) WriterID() string { return r.writer }

// Codec is the converter.PayloadCodec of a keyring.
type Codec struct {
	ring *Keyring
	// A deflate writer or reader holds about a megabyte of window and tables:
	// made once and reset for each payload, not allocated per payload.
	writers, readers sync.Pool
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns the codec.
func New(ring *Keyring) *Codec {
	c := &Codec{ring: ring}
	c.writers.New = func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed) // only fails on a bad level
		return w
	}
	c.readers.New = func() any { return flate.NewReader(bytes.NewReader(nil)) }
	return c
}

// Encode seals each payload under the writing key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		sealed, err := c.seal(p)
		if err != nil {
			return nil, err
		}
		out[i] = sealed
	}
	return out, nil
}

func (c *Codec) seal(p *commonpb.Payload) (*commonpb.Payload, error) {
	plain, err := proto.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encrypt payload: %w", err)
	}
	var z bytes.Buffer
	fw := c.writers.Get().(*flate.Writer)
	defer c.writers.Put(fw)
	fw.Reset(&z)
	if _, err := fw.Write(plain); err != nil {
		return nil, fmt.Errorf("compress payload: %w", err)
	}
	if err := fw.Close(); err != nil {
		return nil, fmt.Errorf("compress payload: %w", err)
	}
	aead := c.ring.keys[c.ring.writer]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+z.Len()+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("encrypt payload: %w", err)
	}
	// The key ID is authenticated too: a payload cannot be relabelled to another key.
	data := aead.Seal(nonce, nonce, z.Bytes(), []byte(c.ring.writer))
	return &commonpb.Payload{
		Metadata: map[string][]byte{
			converter.MetadataEncoding: []byte(Encoding),
			MetaKeyID:                  []byte(c.ring.writer),
			MetaCipher:                 []byte(cipherValue),
		},
		Data: data,
	}, nil
}

// Decode opens each encrypted payload with the key it names; others pass through.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		opened, err := c.open(p)
		if err != nil {
			return nil, err
		}
		out[i] = opened
	}
	return out, nil
}

// ErrUnknownKey is a payload encrypted under a key the keyring does not hold.
var ErrUnknownKey = errors.New("payload encrypted with a key not in PAYLOAD_KEYS")

func (c *Codec) open(p *commonpb.Payload) (*commonpb.Payload, error) {
	id := string(p.Metadata[MetaKeyID])
	aead, ok := c.ring.keys[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, id)
	}
	if len(p.Data) < aead.NonceSize() {
		return nil, errors.New("decrypt payload: too short")
	}
	nonce, sealed := p.Data[:aead.NonceSize()], p.Data[aead.NonceSize():]
	z, err := aead.Open(nil, nonce, sealed, []byte(id))
	if err != nil {
		return nil, fmt.Errorf("decrypt payload under key %q: %w", id, err)
	}
	fr := c.readers.Get().(io.ReadCloser)
	defer c.readers.Put(fr)
	if err := fr.(flate.Resetter).Reset(bytes.NewReader(z), nil); err != nil {
		return nil, fmt.Errorf("decompress payload: %w", err)
	}
	plain, err := io.ReadAll(fr)
	if err != nil {
		return nil, fmt.Errorf("decompress payload: %w", err)
	}
	var out commonpb.Payload
	if err := proto.Unmarshal(plain, &out); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	return &out, nil
}

// Seal encrypts bytes outside Temporal (a dead letter's value) as a payload would
// be: the result is the sealed payload, marshalled.
func (c *Codec) Seal(b []byte) ([]byte, error) {
	p, err := c.seal(&commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingBinary)}, Data: b})
	if err != nil {
		return nil, err
	}
	out, err := proto.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	return out, nil
}

// Open returns the bytes Seal sealed.
func (c *Codec) Open(sealed []byte) ([]byte, error) {
	var p commonpb.Payload
	if err := proto.Unmarshal(sealed, &p); err != nil {
		return nil, fmt.Errorf("decrypt: not a sealed value: %w", err)
	}
	if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
		return nil, errors.New("decrypt: not a sealed value")
	}
	opened, err := c.open(&p)
	if err != nil {
		return nil, err
	}
	return opened.GetData(), nil
}
