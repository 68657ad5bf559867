package tenants

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "acme": true, "a-b_c9": true, "9a": true, strings.Repeat("a", 63): true,
		"": false, "-a": false, "_a": false, "Acme": false, strings.Repeat("a", 64): false,
		"a:b": false, "a%b": false, "a b": false, "a\n": false, "é": false,
	} {
		if got := Valid(name); got != want {
			t.Errorf("Valid(%q) = %v, want %v", name, got, want)
		}
	}
}
