package observability_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sdkMetricNames are the metric names the Temporal Go SDK defines
// (internal/common/metrics/constants.go of the module in go.mod), as the
// OpenTelemetry exporter here names them: counters with _total, latencies as
// _seconds histograms, gauges as they are.
func sdkMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/sdk").Output()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "internal", "common", "metrics", "constants.go"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{}
	decl := regexp.MustCompile(`(?m)^\s*(\w+)\s*=\s*(?:(\w+)\s*\+\s*)?"(\w+)"`)
	for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
		values[m[1]] = values[m[2]] + m[3]
	}
	gauges := map[string]bool{"WorkerTaskSlotsAvailable": true, "WorkerTaskSlotsUsed": true, "NumPoller": true,
		"StickyCacheSize": true, "WorkflowActiveThreadCount": true}
	names := map[string]bool{}
	for id, v := range values {
		switch {
		case !strings.HasPrefix(v, "temporal_") || id == "TemporalMetricsPrefix":
		case strings.Contains(id, "Latency"):
			for _, suffix := range []string{"_seconds_bucket", "_seconds_sum", "_seconds_count"} {
				names[v+suffix] = true
			}
		case gauges[id]:
			names[v] = true
		default:
			names[v+"_total"] = true
		}
	}
	if !names["temporal_workflow_task_execution_failed_total"] || !names["temporal_request_failure_total"] {
		t.Fatalf("the SDK's metric names were not read: %v", names)
	}
	return names
}
