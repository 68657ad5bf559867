package operator

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// worker orders repair refuses, before it reads any setting, a call that names
// no runs or no reset point: an empty query would list every workflow.
func TestOrdersRepairCommandLine(t *testing.T) {
	none := func(string) string { return "" }
	q := "ExecutionStatus = 'Failed'"
	for _, row := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--help"}, 0, "--reset-to"},
		{[]string{"--reset-to", "last"}, 2, "want --query"},
		{[]string{"--query", " ", "--reset-to", "last"}, 2, "want --query"},
		{[]string{"--query", q}, 2, "want --reset-to first or last"},
		{[]string{"--query", q, "--reset-to", "middle"}, 2, "want --reset-to first or last"},
		{[]string{"--query", q, "--reset-to", "last", "--rate", "0"}, 2, "want a positive --rate"},
		{[]string{"--query", q, "--reset-to", "last", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--query", q, "--reset-to", "first"}, 1, "DATABASE_URL is required"},
	} {
		var out bytes.Buffer
		code := workerApp(none, &out, &out).Run(context.Background(), append([]string{"orders", "repair"}, row.args...))
		if code != row.code || !strings.Contains(out.String(), row.out) {
			t.Errorf("worker orders repair %q: exit %d, want %d; output:\n%s", row.args, code, row.code, out.String())
		}
	}
}
