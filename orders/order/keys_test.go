package order

import (
	"strings"
	"testing"
)

func TestCheckKeyBounds(t *testing.T) {
	cases := []struct {
		key string
		ok  bool
	}{
		{"", false},
		{"k", true},
		{strings.Repeat("k", MaxKeyLen), true},
		{strings.Repeat("k", MaxKeyLen+1), false},
		{"a b", false},
		{"tab\t", false},
		{"caf\u00e9", false},
		{"\x7f", false},
		{`"!~:%`, true},
	}
	for _, c := range cases {
		if msg := CheckKey(c.key); (msg == "") != c.ok {
			t.Errorf("CheckKey(%q) = %q, want ok=%v", c.key, msg, c.ok)
		}
	}
}
