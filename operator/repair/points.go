package repair

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
)

// errNoTask is a run with no workflow task to reset to.
var errNoTask = errors.New("no workflow task to reset to")

// resetEvent finds in the run's history the event its reset finishes the
// workflow task at, as `temporal workflow reset --type FirstWorkflowTask` and
// `LastWorkflowTask` do: the first or the last WorkflowTaskCompleted; for a run
// none of whose tasks completed, the event after its first WorkflowTaskScheduled.
// Histories are bounded (runs continue as new), so reading one forward is cheap.
func (r *Repair) resetEvent(ctx context.Context, workflowID, runID string) (int64, error) {
	it := r.engine.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var completed, scheduled int64
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return 0, fmt.Errorf("read the history: %w", err)
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			completed = e.GetEventId()
			if r.o.ResetTo == ResetFirst {
				return completed, nil
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			if scheduled == 0 {
				scheduled = e.GetEventId() + 1
			}
		}
	}
	switch {
	case completed > 0:
		return completed, nil
	case scheduled > 0:
		return scheduled, nil
	}
	return 0, errNoTask
}
