package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
)

// keepSlow keeps exactly the slowest slowKept, whatever the order they come in.
func TestKeepSlowKeepsTheSlowest(t *testing.T) {
	var kept []slowPost
	for _, i := range rand.Perm(100) {
		kept = keepSlow(kept, slowPost{took: time.Duration(i) * time.Millisecond})
	}
	var got []int
	for _, k := range kept {
		got = append(got, int(k.took/time.Millisecond))
	}
	slices.Sort(got)
	if len(got) != slowKept || got[0] != 100-slowKept || got[len(got)-1] != 99 {
		t.Fatalf("kept %v; want %d to 99", got, 100-slowKept)
	}
}

// A workflow task is named by the queue it waited in.
func TestShortNamesTheQueueAWorkflowTaskWaitedIn(t *testing.T) {
	sticky := &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
		Attributes: &historypb.HistoryEvent_WorkflowTaskScheduledEventAttributes{WorkflowTaskScheduledEventAttributes: &historypb.WorkflowTaskScheduledEventAttributes{
			TaskQueue: &taskqueuepb.TaskQueue{Name: "w1-sticky", Kind: enumspb.TASK_QUEUE_KIND_STICKY}}}}
	started := &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED}
	if got := short(sticky) + "→" + short(started); got != "workflowtaskscheduled(sticky)→workflowtaskstarted" {
		t.Fatalf("named %q", got)
	}
}
