//go:build stack

package operator

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/testkit/stacktest"
)

// A second tenant's key is made with DATABASE_URL alone, as a new user would.
func TestKeysCreateNeedsOnlyTheDatabase(t *testing.T) {
	env := stacktest.Env(t)
	stacktest.Pool(t) // migrated
	var out bytes.Buffer
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return env[k]
		}
		return ""
	}
	if code := apiApp(getenv, &out, &out).Run(context.Background(), []string{"keys", "create", "--tenant", stacktest.Name("second")}); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if !strings.HasPrefix(out.String(), "ofk_") && len(strings.TrimSpace(out.String())) < 20 {
		t.Fatalf("no key printed: %q", out.String())
	}
}
