//go:build stack

package operator

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/orderflow/orderflow/testkit/stacktest"
)

// A worker's first deploy meets a task queue with no run: its gate passes, so the
// pods start; a queue name that would break the query is refused.
func TestShadowOfAnEmptyQueuePassesAndABadQueueIsRefused(t *testing.T) {
	env := stacktest.Env(t)
	run := func(queue string) (int, string) {
		vars := map[string]string{"TEMPORAL_ADDRESS": env["TEMPORAL_ADDRESS"], "TEMPORAL_NAMESPACE": env["TEMPORAL_NAMESPACE"],
			"PAYLOAD_KEYS": env["PAYLOAD_KEYS"], "TASK_QUEUE": queue}
		var out, errs bytes.Buffer
		code := workerApp(func(k string) string { return vars[k] }, &out, &errs).Run(context.Background(), []string{"shadow", "--since", "1h"})
		return code, out.String() + errs.String()
	}
	if code, out := run(stacktest.Name("empty-queue")); code != 0 || !strings.Contains(out, "checked 0 histories") {
		t.Fatalf("gate on a queue with no run: exit %d, want 0 after checking none:\n%s", code, out)
	}
	if code, out := run("orders' OR TaskQueue != 'x"); code == 0 || !strings.Contains(out, "TASK_QUEUE") {
		t.Fatalf("gate with a queue name holding a quote: exit %d, want a configuration error:\n%s", code, out)
	}
}
