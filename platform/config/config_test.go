package config

import (
	"strings"
	"testing"
	"time"
)

func TestEnv(t *testing.T) {
	vars := map[string]string{
		"NAME": " api ", "N": "7", "ZERO": "0", "BAD_N": "-1", "BAD_C": "-2", "D": "3s", "BAD_D": "soon", "L": "a, b,,c",
	}
	e := New(func(k string) string { return vars[k] })

	if got := e.String("NAME", "x"); got != "api" {
		t.Errorf("String = %q, want api", got)
	}
	if got := e.String("UNSET", "def"); got != "def" {
		t.Errorf("String default = %q", got)
	}
	if got := e.Int("N", 1); got != 7 {
		t.Errorf("Int = %d, want 7", got)
	}
	if got := e.Count("ZERO", 90); got != 0 {
		t.Errorf("Count = %d, want 0 (none)", got)
	}
	if got := e.Duration("D", time.Second); got != 3*time.Second {
		t.Errorf("Duration = %v", got)
	}
	if got := e.List("L", ""); strings.Join(got, "|") != "a|b|c" {
		t.Errorf("List = %q", got)
	}
	if e.Err() != nil {
		t.Fatalf("unexpected error: %v", e.Err())
	}

	e.Int("BAD_N", 1)
	e.Count("BAD_C", 1)
	e.Duration("BAD_D", time.Second)
	e.Required("MISSING")
	err := e.Err()
	for _, want := range []string{"BAD_N", "BAD_C", "BAD_D", "MISSING is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Err() = %v, want it to mention %s", err, want)
		}
	}
}

func TestCommonNeedsPayloadKeysAndNeverQuotesThem(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://x"}
	e := New(func(k string) string { return env[k] })
	e.Common()
	if err := e.Err(); err == nil || !strings.Contains(err.Error(), "PAYLOAD_KEYS") {
		t.Fatalf("missing PAYLOAD_KEYS: %v", err)
	}
	env["PAYLOAD_KEYS"] = "k1:c2hvcnQtc2VjcmV0LXZhbHVl" // 18 bytes: too short for AES-256
	e = New(func(k string) string { return env[k] })
	e.Common()
	err := e.Err()
	if err == nil || strings.Contains(err.Error(), "c2hvcnQtc2VjcmV0LXZhbHVl") {
		t.Fatalf("bad PAYLOAD_KEYS: %v", err)
	}
	env["PAYLOAD_KEYS"] = "k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	e = New(func(k string) string { return env[k] })
	if c := e.Common(); e.Err() != nil || c.PayloadKeys.WriterID() != "k1" {
		t.Fatalf("good PAYLOAD_KEYS: %v", e.Err())
	}
}
