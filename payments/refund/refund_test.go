package refund

import (
	"encoding/hex"
	"testing"
)

// Fingerprints are stored with keys and refunds: the same request must hash to the
// same bytes in every release (version 1, then SHA-256 of the length-prefixed
// fields), and another amount or reason to others.
func TestFingerprintIsStable(t *testing.T) {
	const want = "0113b106759c9cf6191b0dfdab033d3379e6c0149128bf143bb7fc82ff0276fb7f"
	if got := hex.EncodeToString(Fingerprint("ord_1", 100, ReasonDuplicate)); got != want {
		t.Fatalf("fingerprint %s, want %s", got, want)
	}
	a := Fingerprint("ord_1", 100, "")
	for _, other := range [][]byte{Fingerprint("ord_1", 10, ""), Fingerprint("ord_10", 100, ""), Fingerprint("ord_1", 100, ReasonFraudulent)} {
		if string(other) == string(a) {
			t.Fatal("two requests share a fingerprint")
		}
	}
}

func TestIdentityIsTheKindsOwn(t *testing.T) {
	wf := WorkflowID("acme", "http", "k1")
	if wf != "refund:acme:http:k1" {
		t.Fatalf("workflow ID %q", wf)
	}
	if id := IDFor(wf); len(id) != 30 || id[:4] != "rfd_" {
		t.Fatalf("refund ID %q", id)
	}
}
