//go:build stack

package worker_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/workflows"
)

// The worker binary exports the Temporal SDK's own metrics beside orderflow's: the
// ones that tell whether the fleet is big enough.
func TestWorkerExportsTemporalSDKMetrics(t *testing.T) {
	h := newHarness(t)
	ops := stacktest.FreeAddr(t)
	env := h.WorkerEnv()
	env["OPS_ADDR"] = ops
	stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, in := h.placeOrder(stacktest.Name("key"), "pm_card_visa")
	var res workflows.OrderResult
	if err := h.execute(t, ctx, id, in).Get(ctx, &res); err != nil || res.Status != order.StatusPaid {
		t.Fatalf("order: %+v, %v", res, err)
	}
	resp, err := http.Get("http://" + ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{
		"temporal_workflow_task_schedule_to_start_latency_seconds_bucket",
		"temporal_activity_schedule_to_start_latency_seconds_bucket",
		"temporal_worker_task_slots_available",
		"temporal_request_total",
		"orderflow_worker_shutdown_duration_seconds",
	} {
		if !strings.Contains(string(body), "\n"+name) {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if t.Failed() {
		var names []string
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "# TYPE temporal") {
				names = append(names, line)
			}
		}
		t.Logf("temporal metrics: %s", strings.Join(names, "\n"))
	}
}
