package workflows

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedHistories replays histories recorded from the real server
// (worker's TestRealHistoriesReplay, and TestRefundRequestsOnTheRealStack for
// refund_*, with ORDERFLOW_RECORD_HISTORIES=1). A change to Order or Refund that
// would break running workflows fails here. v1_1_* are runs started
// before the change closed-doors; v1_2_* runs of its version 1, before its version
// 2 kept the status search attribute.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("found %d recorded histories, want at least 3", len(files))
	}
	logger := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(Order)
			r.RegisterWorkflow(FollowPayment)
			r.RegisterWorkflow(Refund)
			if err := r.ReplayWorkflowHistoryFromJSONFile(logger, f); err != nil {
				t.Fatal(err)
			}
		})
	}
}
