package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/customers/receipt"
)

const customerHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func newSigner(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func erasure() receipt.Receipt {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	return receipt.Receipt{ID: "era_01", Tenant: "acme", CustomerHash: customerHash, ErasedAt: at,
		Stores: []receipt.Store{{Name: "orders", Affected: 3, Kept: "amounts"}, {Name: "refunds", Affected: 1}},
		Keys:   []receipt.Key{{ID: "ck_0123456789abcdef0123456789abcdef", Fingerprint: "ab12", DestroyedAt: at.Add(-time.Minute)}}}
}

func sign(t *testing.T, r receipt.Receipt, priv ed25519.PrivateKey) receipt.Signed {
	t.Helper()
	s, err := receipt.Sign(r, priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestASignedReceiptVerifies(t *testing.T) {
	pub, priv := newSigner(t)
	s := sign(t, erasure(), priv)
	got, err := receipt.Verify(s, pub)
	if err != nil {
		t.Fatal(err)
	}
	want := erasure()
	want.Version, want.SigningKey = receipt.Version, receipt.KeyID(pub)
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("verified receipt:\n%s\nwant\n%s", g, w)
	}
	if !strings.HasPrefix(want.SigningKey, "ed25519:") || len(want.SigningKey) != len("ed25519:")+32 {
		t.Fatalf("signing key ID %q: want ed25519: and 32 hex digits", want.SigningKey)
	}
	// Ed25519 is deterministic: a retried step signs the same receipt.
	if again := sign(t, erasure(), priv); !bytes.Equal(again.Receipt, s.Receipt) || again.Signature != s.Signature {
		t.Fatal("signing one receipt twice gave two documents")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The signature is of the compact JSON: a document re-indented on its way to a
// regulator still verifies.
func TestAReindentedReceiptVerifies(t *testing.T) {
	pub, priv := newSigner(t)
	s := sign(t, erasure(), priv)
	var indented bytes.Buffer
	if err := json.Indent(&indented, s.Receipt, "", "    "); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(indented.Bytes(), s.Receipt) {
		t.Fatal("indenting changed nothing: the test proves nothing")
	}
	got, err := receipt.Verify(receipt.Signed{Receipt: indented.Bytes(), Signature: s.Signature}, pub)
	if err != nil || got.ID != "era_01" || got.Stores[0].Affected != 3 {
		t.Fatalf("re-indented receipt: %+v, %v", got, err)
	}
}

func TestAnyChangedValueIsForged(t *testing.T) {
	pub, priv := newSigner(t)
	s := sign(t, erasure(), priv)
	for name, change := range map[string][2]string{
		"a count":           {`"affected":3`, `"affected":2`},
		"the customer hash": {customerHash, strings.Repeat("0", 64)},
		"the tenant":        {`"tenant":"acme"`, `"tenant":"acma"`},
		"a key's time":      {`"destroyed_at":"2025-03-04T05:05:07Z"`, `"destroyed_at":"2025-03-04T05:05:08Z"`},
		"the version":       {`"version":1`, `"version":2`},
		"an added field":    {`"id":"era_01"`, `"id":"era_01","note":"by hand"`},
		"a removed store":   {`,{"name":"refunds","affected":1}`, ``},
	} {
		if n := bytes.Count(s.Receipt, []byte(change[0])); n != 1 {
			t.Fatalf("%s: %q occurs %d times in %s", name, change[0], n, s.Receipt)
		}
		forged := receipt.Signed{Receipt: bytes.Replace(s.Receipt, []byte(change[0]), []byte(change[1]), 1), Signature: s.Signature}
		if got, err := receipt.Verify(forged, pub); !errors.Is(err, receipt.ErrForged) {
			t.Errorf("%s changed: %+v, %v; want ErrForged", name, got, err)
		}
	}
}

func TestAReceiptOfAnotherKeyIsForged(t *testing.T) {
	_, priv := newSigner(t)
	other, _ := newSigner(t)
	if got, err := receipt.Verify(sign(t, erasure(), priv), other); !errors.Is(err, receipt.ErrForged) {
		t.Fatalf("verified with another key: %+v, %v; want ErrForged", got, err)
	}
}

// A document signed by the right key that names another signing key, or holds a
// field this version does not know, is refused too.
func TestASignedDocumentMustBeAReceiptOfItsKey(t *testing.T) {
	pub, priv := newSigner(t)
	other, _ := newSigner(t)
	s := sign(t, erasure(), priv)
	for name, body := range map[string][]byte{
		"another signing key": bytes.Replace(s.Receipt, []byte(receipt.KeyID(pub)), []byte(receipt.KeyID(other)), 1),
		"an unknown field":    bytes.Replace(s.Receipt, []byte(`"id":"era_01"`), []byte(`"id":"era_01","note":"x"`), 1),
	} {
		if bytes.Equal(body, s.Receipt) {
			t.Fatalf("%s: nothing replaced", name)
		}
		resigned := receipt.Signed{Receipt: body, Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, body))}
		if got, err := receipt.Verify(resigned, pub); err == nil {
			t.Errorf("%s: verified as %+v", name, got)
		}
	}
}

func TestAMalformedSignatureIsForged(t *testing.T) {
	pub, priv := newSigner(t)
	s := sign(t, erasure(), priv)
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil {
		t.Fatal(err)
	}
	sig[0] ^= 1
	for name, bad := range map[string]string{
		"empty":         "",
		"not base64":    "not base64!",
		"too short":     base64.StdEncoding.EncodeToString(sig[:32]),
		"too long":      base64.StdEncoding.EncodeToString(append(sig, 0)),
		"a flipped bit": base64.StdEncoding.EncodeToString(sig),
	} {
		if got, err := receipt.Verify(receipt.Signed{Receipt: s.Receipt, Signature: bad}, pub); !errors.Is(err, receipt.ErrForged) {
			t.Errorf("signature %s: %+v, %v; want ErrForged", name, got, err)
		}
	}
	if _, err := receipt.Verify(receipt.Signed{Receipt: json.RawMessage(`{"id":`), Signature: s.Signature}, pub); err == nil {
		t.Error("a receipt that is not JSON verified")
	}
}

func TestAPublishedKeyParsesBackAndMustMatchItsID(t *testing.T) {
	pub, _ := newSigner(t)
	other, _ := newSigner(t)
	p := receipt.Publish(pub)
	if p.ID != receipt.KeyID(pub) {
		t.Fatalf("published id %s, want %s", p.ID, receipt.KeyID(pub))
	}
	got, err := p.Parse()
	if err != nil || !got.Equal(pub) {
		t.Fatalf("parse the published key: %x, %v", got, err)
	}
	// Published as JSON and read back, as a regulator would.
	var read receipt.PublicKey
	if err := json.Unmarshal([]byte(mustJSON(t, p)), &read); err != nil {
		t.Fatal(err)
	}
	if got, err := read.Parse(); err != nil || !got.Equal(pub) {
		t.Fatalf("parse the key read back: %x, %v", got, err)
	}
	for name, bad := range map[string]receipt.PublicKey{
		"another key's id": {ID: receipt.KeyID(other), Key: p.Key},
		"not base64":       {ID: p.ID, Key: "not base64!"},
		"31 bytes":         {Key: base64.StdEncoding.EncodeToString(pub[:31])},
		"no key":           {ID: p.ID},
	} {
		if got, err := bad.Parse(); err == nil {
			t.Errorf("%s parsed as %x", name, got)
		}
	}
}

// PostgreSQL's jsonb, where the deployment keeps the erasure's answer, stores an
// object's keys sorted by length and name: the receipt read back still verifies.
func TestAReceiptWithItsKeysReorderedVerifies(t *testing.T) {
	pub, priv := newSigner(t)
	s := sign(t, erasure(), priv)
	var asMap map[string]any
	if err := json.Unmarshal(s.Receipt, &asMap); err != nil {
		t.Fatal(err)
	}
	reordered, err := json.Marshal(asMap) // encoding/json sorts a map's keys
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(reordered, s.Receipt) {
		t.Fatal("reordering changed nothing: the test proves nothing")
	}
	if _, err := receipt.Verify(receipt.Signed{Receipt: reordered, Signature: s.Signature}, pub); err != nil {
		t.Fatalf("a receipt with its keys reordered: %v", err)
	}
}
