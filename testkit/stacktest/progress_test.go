package stacktest

import (
	"strings"
	"testing"
	"time"
)

func TestProgressingWaitsWhileCountGrows(t *testing.T) {
	n := 0
	// Slower than stall in all, but it grows every poll.
	err := progressing(30*time.Millisecond, time.Second, 5*time.Millisecond, 20, func() int { n++; return n })
	if err != nil {
		t.Fatalf("a count that grows every poll: %v", err)
	}
}

func TestProgressingFailsWhenCountStops(t *testing.T) {
	n := 0
	err := progressing(30*time.Millisecond, time.Second, 5*time.Millisecond, 20, func() int { n = min(n+1, 3); return n })
	if err == nil || !strings.Contains(err.Error(), "3 of 20") || !strings.Contains(err.Error(), "none for") {
		t.Fatalf("a count stopped at 3: %v", err)
	}
}

func TestProgressingFailsAfterItsLimit(t *testing.T) {
	n := 0
	err := progressing(time.Second, 50*time.Millisecond, 5*time.Millisecond, 1_000_000, func() int { n++; return n })
	if err == nil || strings.Contains(err.Error(), "none for") {
		t.Fatalf("a count that grows but never arrives, past the limit: %v", err)
	}
}
