package settings

import (
	"strings"
	"testing"

	"github.com/orderflow/orderflow/platform/config"
	"github.com/orderflow/orderflow/testkit"
)

// The API reads the client from one header, named by TRUSTED_PROXY_HEADER;
// a header it cannot read is an error at start that names the variable.
func TestTrustedProxyHeaderIsOneOfTwo(t *testing.T) {
	env, err := testkit.ComposeEnv("../docker-compose.yml", "api")
	if err != nil {
		t.Fatal(err)
	}
	for value, ok := range map[string]bool{"": true, "Forwarded": true, "x-forwarded-for": true, "X-Real-IP": false, "Forwarded,X-Forwarded-For": false} {
		_, err := LoadAPI(config.New(func(k string) string {
			if k == "TRUSTED_PROXY_HEADER" {
				return value
			}
			return env[k]
		}))
		if ok && err != nil {
			t.Errorf("TRUSTED_PROXY_HEADER=%q: %v", value, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "TRUSTED_PROXY_HEADER")) {
			t.Errorf("TRUSTED_PROXY_HEADER=%q: %v, want an error naming it", value, err)
		}
	}
}
