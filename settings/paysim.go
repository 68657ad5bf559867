package settings

import (
	"errors"
	"time"

	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/platform/config"
)

// Paysim is the payment sandbox's configuration.
type Paysim struct {
	Addr     string
	LogLevel string
	// State is the file that keeps the sandbox's state across restarts; "" keeps
	// it in memory only.
	State    string
	Options  sandbox.Options
	Webhooks sandbox.Webhooks
}

// LoadPaysim reads the sandbox's settings, reporting every bad one at once.
func LoadPaysim(e *config.Env) (Paysim, error) {
	c := Paysim{Addr: e.String("PAYSIM_ADDR", ":8099"), LogLevel: e.Level(), State: e.String("PAYSIM_STATE", "")}
	c.Options = sandbox.Options{
		Faults: sandbox.Faults{
			LatencyMS:  e.Count("PAYSIM_LATENCY_MS", 0),
			FailBefore: e.Count("PAYSIM_FAIL_BEFORE", 0),
			FailAfter:  e.Count("PAYSIM_FAIL_AFTER", 0),
			DropAfter:  e.Count("PAYSIM_DROP_AFTER", 0),
		},
		KeyTTL:          e.Duration("PAYSIM_KEY_TTL", 24*time.Hour),
		SearchDelay:     e.Duration("PAYSIM_SEARCH_DELAY", time.Second),
		RefundFailAfter: e.Duration("PAYSIM_REFUND_FAIL_AFTER", 30*time.Second),
	}
	c.Webhooks = sandbox.Webhooks{URL: e.String("PAYSIM_WEBHOOK_URL", ""), Secrets: e.List("PAYSIM_WEBHOOK_SECRETS", ""),
		Duplicates: e.Int("PAYSIM_WEBHOOK_DUPLICATES", 1) - 1, DelayMS: e.Int("PAYSIM_WEBHOOK_DELAY_MS", 1)}
	if err := e.Err(); err != nil {
		return c, err
	}
	if c.Webhooks.URL != "" && len(c.Webhooks.Secrets) == 0 {
		return c, errors.New("PAYSIM_WEBHOOK_URL needs PAYSIM_WEBHOOK_SECRETS to sign with")
	}
	return c, nil
}
