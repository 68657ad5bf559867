package retention_test

import (
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/worker/retention"
)

func TestRetentionsBelowWhatDependsOnThemAreRefused(t *testing.T) {
	r := retention.Defaults
	if err := r.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	r.Events, r.Webhooks, r.Orders = time.Hour, 48*time.Hour, 30*24*time.Hour
	err := r.Validate()
	for _, name := range []string{"EVENTS_RETENTION", "WEBHOOK_EVENTS_RETENTION", "ORDERS_RETENTION"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Validate() = %v, want it to name %s", err, name)
		}
	}
}

func TestAPassPausesInProportionToItsStatements(t *testing.T) {
	for _, c := range []struct {
		took  time.Duration
		share float64
		want  time.Duration
	}{
		{40 * time.Millisecond, 0.25, 120 * time.Millisecond},
		{400 * time.Millisecond, 0.25, 1200 * time.Millisecond}, // a slow database: a longer pause
		{40 * time.Millisecond, 0.5, 40 * time.Millisecond},
		{40 * time.Millisecond, 1, 0},
		{40 * time.Millisecond, 0, 0},
	} {
		if got := retention.PauseAfter(c.took, c.share); got != c.want {
			t.Errorf("PauseAfter(%s, %v) = %s, want %s", c.took, c.share, got, c.want)
		}
	}
	if s := retention.Paced().Share; s <= 0 || s >= 1 {
		t.Errorf("the workers' share %v leaves the writers no time", s)
	}
}
