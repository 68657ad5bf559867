package httpapi

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/orderflow/orderflow/orders/order"
)

func TestParseIdempotencyKey(t *testing.T) {
	long := strings.Repeat("a", 255)
	tests := []struct {
		name    string
		values  []string
		want    string
		wantErr error
	}{
		{"bare uuid", []string{"8e03978e-40d5-43e8-bc93-6894a57f9324"}, "8e03978e-40d5-43e8-bc93-6894a57f9324", nil},
		{"sf-string", []string{`"8e03978e-40d5"`}, "8e03978e-40d5", nil},
		{"sf-string with escapes", []string{`"a\"b\\c"`}, `a"b\c`, nil},
		{"255 characters", []string{long}, long, nil},
		{"surrounding spaces", []string{"  k1 "}, "k1", nil},
		{"missing", nil, "", errKeyMissing},
		{"empty", []string{""}, "", errKeyMissing},
		{"two fields", []string{"a", "b"}, "", errKeyMultiple},
		{"list in one field", []string{`"a", "b"`}, "", errKeyMultiple},
		{"bare list", []string{"a,b"}, "", errKeyMultiple},
		{"256 characters", []string{long + "a"}, "", errKeyMalformed},
		{"empty sf-string", []string{`""`}, "", errKeyMalformed},
		{"space inside", []string{"a b"}, "", errKeyMalformed},
		{"space in sf-string", []string{`"a b"`}, "", errKeyMalformed},
		{"unterminated", []string{`"abc`}, "", errKeyMalformed},
		{"bad escape", []string{`"a\nb"`}, "", errKeyMalformed},
		{"parameters", []string{`"abc";x=1`}, "", errKeyMalformed},
		{"non-ASCII", []string{"clé"}, "", errKeyMalformed},
		{"control", []string{"a\x01b"}, "", errKeyMalformed},
		{"quote in bare", []string{`a"b`}, "", errKeyMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseIdempotencyKey(tt.values)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Fatalf("ParseIdempotencyKey(%q) = %q, %v; want %q, %v", tt.values, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func FuzzParseIdempotencyKey(f *testing.F) {
	for _, s := range []string{"k", `"k"`, `"a\"b"`, "a,b", `"a", "b"`, "", " ", strings.Repeat("x", 300), "\xff", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := ParseIdempotencyKey([]string{v})
		if err != nil {
			return
		}
		if len(key) < 1 || len(key) > order.MaxKeyLen {
			t.Fatalf("accepted key of length %d", len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x21 || key[i] > 0x7e {
				t.Fatalf("accepted byte %#x", key[i])
			}
		}
		// The sf-string serialisation of an accepted key parses back to it.
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if again, err := ParseIdempotencyKey([]string{quoted}); err != nil || again != key {
			t.Fatalf("round trip of %q via %q = %q, %v", key, quoted, again, err)
		}
	})
}

func TestParsePreferWait(t *testing.T) {
	tests := []struct {
		values []string
		want   int
	}{
		{nil, 0},
		{[]string{"wait=5"}, 5},
		{[]string{"respond-async, wait=10"}, 10},
		{[]string{"return=minimal", "wait=3"}, 3},
		{[]string{"wait=100"}, MaxWait},
		{[]string{"wait=-1"}, 0},
		{[]string{"wait=abc"}, 0},
		{[]string{`wait="7"`}, 7},
	}
	for _, tt := range tests {
		if got := parsePreferWait(tt.values); got != tt.want {
			t.Errorf("parsePreferWait(%q) = %d, want %d", tt.values, got, tt.want)
		}
	}
}

// Whatever checkParam accepts, Postgres and Temporal take: valid UTF-8, no control
// characters (NUL among them), at most maxParamLen characters.
func FuzzCheckParam(f *testing.F) {
	for _, s := range []string{"", "ord_abc", "a\x00b", "\xff", "\xc3\x28", "é", "\u2028", "a\x7fb", strings.Repeat("x", 256), strings.Repeat("é", 255)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if checkParam(v, maxParamLen) != "" {
			return
		}
		if !utf8.ValidString(v) || strings.ContainsAny(v, "\x00\x7f") || utf8.RuneCountInString(v) > maxParamLen {
			t.Fatalf("accepted %q", v)
		}
		for _, r := range v {
			if r < 0x20 {
				t.Fatalf("accepted a control character in %q", v)
			}
		}
	})
}
