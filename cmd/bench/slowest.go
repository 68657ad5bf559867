package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// slowKept is how many of a level's slowest admitted POSTs are traced.
const slowKept = 20

// slowPost is an admitted POST kept to be traced: its workflow and its time.
type slowPost struct {
	workflowID string
	began      time.Time
	took       time.Duration
}

// keepSlow keeps p among the slowest slowKept of kept.
func keepSlow(kept []slowPost, p slowPost) []slowPost {
	if len(kept) < slowKept {
		return append(kept, p)
	}
	least := 0
	for i, k := range kept {
		if k.took < kept[least].took {
			least = i
		}
	}
	if p.took > kept[least].took {
		kept[least] = p
	}
	return kept
}

func byTook(a, b slowPost) int { return cmp.Compare(a.took, b.took) }

// traceSlowest reads the histories of the slowest admitted POSTs and says where
// each spent the most time: before its workflow's first event (admission and
// the start), or in the longest wait inside its history, named by the events
// around it; and how many of their workflow tasks timed out (a sticky queue's
// schedule-to-start: the worker that ran the last task did not poll in time)
// and how many activity attempts were retries.
func (b *bench) traceSlowest(ctx context.Context, slow []slowPost) string {
	if len(slow) == 0 {
		return ""
	}
	slices.SortFunc(slow, byTook)
	where := map[string][]time.Duration{}
	timedOut, retries, unread := 0, 0, 0
	for _, p := range slow {
		events, err := b.history(ctx, p.workflowID)
		if err != nil || len(events) == 0 {
			unread++
			continue
		}
		name, longest := "before the workflow's first event", events[0].GetEventTime().AsTime().Sub(p.began)
		for i := 1; i < len(events); i++ {
			if gap := events[i].GetEventTime().AsTime().Sub(events[i-1].GetEventTime().AsTime()); gap > longest {
				name, longest = short(events[i-1])+"→"+short(events[i]), gap
			}
			switch e := events[i]; e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				timedOut++
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				retries += int(max(e.GetActivityTaskStartedEventAttributes().GetAttempt()-1, 0))
			}
		}
		where[name] = append(where[name], longest)
	}
	var parts []string
	for name, gaps := range where {
		slices.Sort(gaps)
		parts = append(parts, fmt.Sprintf("%s %d (median %.1f s)", name, len(gaps), gaps[len(gaps)/2].Seconds()))
	}
	slices.Sort(parts)
	return fmt.Sprintf("the %d slowest admitted POSTs (%.1f-%.1f s) spent the most in: %s; workflow tasks timed out %d, activity retries %d, histories unread %d",
		len(slow), slow[0].took.Seconds(), slow[len(slow)-1].took.Seconds(), strings.Join(parts, ", "), timedOut, retries, unread)
}

// history reads a workflow's events.
func (b *bench) history(ctx context.Context, id string) ([]*historypb.HistoryEvent, error) {
	it := b.tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		events = append(events, e)
	}
	return events, nil
}

// short names an event by its type without the enum's prefix, and a workflow
// task's by the queue it waited in: the worker's own (sticky) or the task
// queue every worker polls.
func short(e *historypb.HistoryEvent) string {
	name := strings.ToLower(strings.TrimPrefix(e.GetEventType().String(), "EVENT_TYPE_"))
	if q := e.GetWorkflowTaskScheduledEventAttributes().GetTaskQueue(); q != nil {
		name += "(" + strings.ToLower(strings.TrimPrefix(q.GetKind().String(), "TASK_QUEUE_KIND_")) + ")"
	}
	return name
}
