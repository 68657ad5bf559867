package identity

import (
	"strings"
	"testing"
)

// A tenant's name is what the older pattern ^[a-z0-9][a-z0-9_-]{0,62}$ took.

func TestCheckKey(t *testing.T) {
	for key, ok := range map[string]bool{"k": true, strings.Repeat("k", MaxKeyLen): true,
		"": false, strings.Repeat("k", MaxKeyLen+1): false, "a b": false, "ké": false} {
		if msg := CheckKey(key); (msg == "") != ok {
			t.Errorf("CheckKey(%q) = %q, want ok=%v", key, msg, ok)
		}
	}
}

// An effect's key is the same for the same workflow, effect and generation, and
// another for any other; 52 characters whatever the workflow ID.
func TestEffectKeysAreStableAndDistinct(t *testing.T) {
	long := "shipment:acme:http:" + strings.Repeat("k", 255)
	seen := map[string]bool{}
	for _, wf := range []string{"shipment:acme:http:k1", "shipment:acme:http:k2", long} {
		for _, effect := range []string{"book", "cancel"} {
			for gen := range 2 {
				k := EffectKey(wf, effect, gen)
				if len(k) != 52 || seen[k] || k != EffectKey(wf, effect, gen) {
					t.Fatalf("EffectKey(%d-char ID, %s, %d) = %q", len(wf), effect, gen, k)
				}
				seen[k] = true
			}
		}
	}
}
