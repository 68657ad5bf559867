package personal_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/platform/personal"
)

const tenant = "acme"

func newKey(t *testing.T, tenant string) (personal.Key, []byte) {
	t.Helper()
	raw := personal.NewRaw()
	k, err := personal.NewKey(personal.NewKeyID(), tenant, raw)
	if err != nil {
		t.Fatal(err)
	}
	return k, raw
}

func TestSealedValuesOpenUnderTheirKey(t *testing.T) {
	k, _ := newKey(t, tenant)
	for _, plain := range []string{"cus_123", "pm_card_visa", "é ü 🙂", strings.Repeat("x", 4096)} {
		sealed := k.Seal(plain)
		if !strings.HasPrefix(sealed, "pd1."+k.ID+".") || strings.Contains(sealed, plain) {
			t.Fatalf("sealed %q as %q: want pd1.%s.… without the plain value", plain, sealed, k.ID)
		}
		if got, err := k.Open(sealed); err != nil || got != plain {
			t.Fatalf("open(seal(%q)) = %q, %v", plain, got, err)
		}
		at := k.SealAt(plain, "order:acme:http:k1/customer_id")
		if got, err := k.Open(at); err != nil || got != plain {
			t.Fatalf("open(sealAt(%q)) = %q, %v", plain, got, err)
		}
	}
}

// Seal draws a nonce each time; SealAt derives it from the place and the value,
// so a retried request seals to the same string and two values never share one.
func TestSealIsRandomizedAndSealAtDeterministic(t *testing.T) {
	k, _ := newKey(t, tenant)
	if a, b := k.Seal("cus_123"), k.Seal("cus_123"); a == b {
		t.Fatalf("two seals of one value are equal: %q", a)
	}
	const at = "order:acme:http:k1/customer_id"
	first := k.SealAt("cus_123", at)
	if again := k.SealAt("cus_123", at); again != first {
		t.Fatalf("sealAt twice for one place: %q then %q", first, again)
	}
	for name, other := range map[string]string{
		"another place":       k.SealAt("cus_123", "order:acme:http:k2/customer_id"),
		"another value":       k.SealAt("cus_124", at),
		"another key's value": mustKey(t, tenant).SealAt("cus_123", at),
	} {
		if other == first || nonce(t, other) == nonce(t, first) {
			t.Errorf("%s: sealed %q with the same nonce as %q", name, other, first)
		}
	}
}

func mustKey(t *testing.T, tenant string) personal.Key {
	k, _ := newKey(t, tenant)
	return k
}

// nonce is the first 12 bytes of a sealed value's body.
func nonce(t *testing.T, sealed string) string {
	t.Helper()
	raw := body(t, sealed)
	return hex.EncodeToString(raw[:12])
}

func body(t *testing.T, sealed string) []byte {
	t.Helper()
	parts := strings.Split(sealed, ".")
	if len(parts) != 3 {
		t.Fatalf("sealed value %q: want 3 parts", sealed)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestTheEmptyStringStaysEmpty(t *testing.T) {
	k, _ := newKey(t, tenant)
	if s := k.Seal(""); s != "" {
		t.Fatalf("seal(\"\") = %q", s)
	}
	if s := k.SealAt("", "somewhere"); s != "" {
		t.Fatalf("sealAt(\"\") = %q", s)
	}
}

func TestOpenRefusesWhatItsKeyDidNotSeal(t *testing.T) {
	k, raw := newKey(t, tenant)
	sealed := k.Seal("cus_123")
	sameIDOtherTenant, err := personal.NewKey(k.ID, "globex", raw)
	if err != nil {
		t.Fatal(err)
	}
	sameIDOtherMaterial, err := personal.NewKey(k.ID, tenant, personal.NewRaw())
	if err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]personal.Key{
		"another key":                       mustKey(t, tenant),
		"its ID and material, other tenant": sameIDOtherTenant,
		"its ID, other material":            sameIDOtherMaterial,
	} {
		if got, err := key.Open(sealed); err == nil || got != "" {
			t.Errorf("%s opened it: %q, %v", name, got, err)
		}
	}
	// A value relabelled to another key ID, under the key of that ID.
	zeros := "ck_" + strings.Repeat("0", 32)
	relabelled := strings.Replace(sealed, k.ID, zeros, 1)
	relabelKey, err := personal.NewKey(zeros, tenant, raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := relabelKey.Open(relabelled); err == nil || got != "" {
		t.Errorf("a value relabelled to another key ID opened: %q, %v", got, err)
	}
}

func TestOpenRefusesAnyFlippedByte(t *testing.T) {
	k, _ := newKey(t, tenant)
	sealed := k.Seal("cus_123")
	raw := body(t, sealed)
	for i := range raw {
		flipped := bytes.Clone(raw)
		flipped[i] ^= 0x01
		forged := "pd1." + k.ID + "." + base64.RawURLEncoding.EncodeToString(flipped)
		if got, err := k.Open(forged); err == nil || got != "" {
			t.Fatalf("byte %d flipped: opened %q, %v", i, got, err)
		}
	}
	if got, err := k.Open(sealed[:len(sealed)-4]); err == nil || got != "" {
		t.Fatalf("truncated: opened %q, %v", got, err)
	}
}

func TestOpenRefusesWhatIsNotSealed(t *testing.T) {
	k, _ := newKey(t, tenant)
	for _, s := range []string{"", "cus_123", "pd1.", "pd1." + k.ID, "pd1." + k.ID + ".", "pd1." + k.ID + ".!!!!",
		"pd1." + k.ID + ".AAAA", "pd2." + k.ID + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		if got, err := k.Open(s); err == nil || got != "" {
			t.Errorf("open(%q) = %q, %v; want an error", s, got, err)
		}
	}
}

func TestIsSealedAndKeyID(t *testing.T) {
	k, _ := newKey(t, tenant)
	sealed := k.Seal("cus_123")
	if !personal.IsSealed(sealed) {
		t.Fatalf("IsSealed(%q) = false", sealed)
	}
	if id, ok := personal.KeyID(sealed); !ok || id != k.ID {
		t.Fatalf("KeyID(%q) = %q, %t; want %s", sealed, id, ok, k.ID)
	}
	for _, s := range []string{"", "cus_123", "pd1.", "pd1." + k.ID + ".", "pd1.ck_xyz.AAAA", "pd1." + strings.ToUpper(k.ID) + ".AAAA",
		"pd2." + k.ID + ".AAAA", "x" + sealed} {
		if personal.IsSealed(s) {
			t.Errorf("IsSealed(%q) = true", s)
		}
		if id, ok := personal.KeyID(s); ok {
			t.Errorf("KeyID(%q) = %q, true", s, id)
		}
	}
}

func TestNewKeyRejectsBadIDsAndLengths(t *testing.T) {
	good := "ck_" + strings.Repeat("ab", 16)
	if _, err := personal.NewKey(good, tenant, make([]byte, 32)); err != nil {
		t.Fatalf("a good key: %v", err)
	}
	if id := personal.NewKeyID(); !personal.KeyIDPattern.MatchString(id) || id == personal.NewKeyID() {
		t.Fatalf("NewKeyID = %q: want a fresh ck_ and 32 hex digits", id)
	}
	for _, id := range []string{"", "ck_", good[:len(good)-1], good + "a", strings.ToUpper(good), "xk_" + good[3:],
		"ck_" + strings.Repeat("g", 32), good + "\n", " " + good} {
		if _, err := personal.NewKey(id, tenant, make([]byte, 32)); err == nil {
			t.Errorf("NewKey(%q) accepted the ID", id)
		}
	}
	// 16 and 24 bytes are AES keys too: only AES-256 is a data key.
	for _, n := range []int{0, 16, 24, 31, 33, 64} {
		if _, err := personal.NewKey(good, tenant, make([]byte, n)); err == nil {
			t.Errorf("NewKey accepted %d bytes", n)
		}
	}
	if n := len(personal.NewRaw()); n != 32 {
		t.Fatalf("NewRaw: %d bytes", n)
	}
}

func TestFingerprintNamesTheMaterial(t *testing.T) {
	k, raw := newKey(t, tenant)
	fp := k.Fingerprint(raw)
	if len(fp) != 32 || fp != k.Fingerprint(bytes.Clone(raw)) {
		t.Fatalf("fingerprint %q: want 32 hex digits, stable", fp)
	}
	if other := k.Fingerprint(personal.NewRaw()); other == fp {
		t.Fatal("two materials share a fingerprint")
	}
	if strings.Contains(fp, hex.EncodeToString(raw)[:16]) {
		t.Fatal("the fingerprint shows the material")
	}
}

func newHasher(t *testing.T) personal.Hasher {
	t.Helper()
	h, err := personal.NewHasher(personal.NewRaw())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHasherIsKeyedAndSeparatesTenants(t *testing.T) {
	h := newHasher(t)
	first := h.Hash(tenant, "cus_123")
	if len(first) != 32 || !bytes.Equal(first, h.Hash(tenant, "cus_123")) {
		t.Fatalf("hash %x: want 32 bytes, the same each time", first)
	}
	if got := h.Hex(tenant, "cus_123"); got != hex.EncodeToString(first) {
		t.Fatalf("Hex = %s, want %x", got, first)
	}
	for name, other := range map[string][]byte{
		"another tenant":   h.Hash("globex", "cus_123"),
		"another customer": h.Hash(tenant, "cus_124"),
		"the joint moved":  h.Hash(tenant+"c", "us_123"),
		"another key":      newHasher(t).Hash(tenant, "cus_123"),
	} {
		if bytes.Equal(other, first) {
			t.Errorf("%s: same hash %x", name, other)
		}
	}
	for _, n := range []int{0, 16, 31, 33} {
		if _, err := personal.NewHasher(make([]byte, n)); err == nil {
			t.Errorf("NewHasher accepted %d bytes", n)
		}
	}
}

func TestDeriveDiffersByLabelAndKey(t *testing.T) {
	h := newHasher(t)
	a := h.Derive("request fingerprint")
	if len(a) != 32 || !bytes.Equal(a, h.Derive("request fingerprint")) {
		t.Fatalf("derive %x: want 32 bytes, the same each time", a)
	}
	for name, other := range map[string][]byte{
		"another label": h.Derive("receipt"),
		"another key":   newHasher(t).Derive("request fingerprint"),
	} {
		if bytes.Equal(other, a) {
			t.Errorf("%s: same secret %x", name, other)
		}
	}
}

// A customer's hash is shown (receipts, rows); a derived secret is not: none may
// equal the other, whatever the tenant's and the customer's names.
func TestNoCustomersHashIsADerivedSecret(t *testing.T) {
	h := newHasher(t)
	for _, label := range []string{"request fingerprint", "receipt"} {
		if bytes.Equal(h.Derive(label), h.Hash("derive", label)) {
			t.Errorf("Derive(%q) is the hash of customer %q of tenant \"derive\"", label, label)
		}
	}
}
