package retention_test

import (
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/internal/retention"
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
