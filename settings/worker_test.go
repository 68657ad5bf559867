package settings

import (
	"strings"
	"testing"

	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/testkit"
)

// A retention shorter than what depends on it is an error at start, naming the
// variable; PAYMENTS_RATE=0 means no provider budget.
func TestRetentionsAndRatesAreCheckedAtStart(t *testing.T) {
	env, err := testkit.ComposeEnv("../docker-compose.yml", "worker")
	if err != nil {
		t.Fatal(err)
	}
	env["PAYMENTS_RATE"] = "0"
	env["ORDERS_RETENTION"] = "4320h"
	c, err := LoadWorker(config.New(func(k string) string { return env[k] }))
	if err != nil || c.Payments.Rate != 0 || c.Retentions.Orders.Hours() != 4320 {
		t.Fatalf("valid: %+v, %v", c.Retentions, err)
	}
	for k, v := range map[string]string{"EVENTS_RETENTION": "1h", "WEBHOOK_EVENTS_RETENTION": "48h", "ORDERS_RETENTION": "720h",
		"REDRIVES_RETENTION": "soon", "PAYMENTS_RATE": "-1", "PRUNE_INTERVAL": "-1s"} {
		bad := map[string]string{k: v}
		_, err := LoadWorker(config.New(func(key string) string {
			if v, ok := bad[key]; ok {
				return v
			}
			return env[key]
		}))
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
}
