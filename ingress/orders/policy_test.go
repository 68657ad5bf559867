package orders

import (
	"testing"
	"time"

	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/workflows"
)

func TestPolicyFromEnv(t *testing.T) {
	env := func(vars map[string]string) *config.Env { return config.New(func(k string) string { return vars[k] }) }

	e := env(nil)
	if p := PolicyFromEnv(e); e.Err() != nil || p.ActionTimeout != workflows.DefaultActionTimeout || p.CancelWindow != 0 {
		t.Fatalf("defaults: %+v, %v", p, e.Err())
	}
	e = env(map[string]string{"CANCEL_WINDOW": "10m", "PAYMENT_POLL_INTERVAL": "2s"})
	if p := PolicyFromEnv(e); e.Err() != nil || p.CancelWindow != 10*time.Minute || p.IntentPoll != 2*time.Second {
		t.Fatalf("set: %+v, %v", p, e.Err())
	}
	for _, bad := range []map[string]string{{"PAYMENT_ACTION_TIMEOUT": "200h"}, {"PAYMENT_POLL_INTERVAL": "1ms"}, {"CANCEL_WINDOW": "soon"}} {
		e = env(bad)
		if PolicyFromEnv(e); e.Err() == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
