package main

import (
	"context"
	"fmt"
	"io"
	"math"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// EngineWork is what Temporal did for one operation, averaged over a sample of
// the scenario's workflow histories: the events it stored, the tasks it
// dispatched, and Temporal Cloud's billable actions as its actions page counts
// them from a history (an estimate: a start, each activity attempt, timer,
// signal, update and search-attribute upsert, and each workflow task that ran
// local activities, whatever their number).
type EngineWork struct {
	Runs            int     `json:"histories"`
	Events          float64 `json:"events"`
	WorkflowTasks   float64 `json:"workflow_tasks"`
	Activities      float64 `json:"activities"`
	LocalActivities float64 `json:"local_activities"`
	Timers          float64 `json:"timers"`
	Updates         float64 `json:"updates"`
	Signals         float64 `json:"signals"`
	Upserts         float64 `json:"upserts"`
	Actions         float64 `json:"actions"`
}

// engineSample is how many of a scenario's histories are read.
const engineSample = 20

// sampleHistories names the workflows whose histories describe scenario's
// operations; they are read after its CPU is measured.
func (b *bench) sampleHistories(scenario string, id func(i int) string) {
	if b.histories == nil {
		b.histories = map[string][]string{}
	}
	for i := range min(engineSample, b.n) {
		b.histories[scenario] = append(b.histories[scenario], id(i))
	}
}

// engineWork reads the histories and averages what they hold.
func (b *bench) engineWork(ctx context.Context, ids []string) (*EngineWork, error) {
	w := &EngineWork{}
	for _, id := range ids {
		if err := b.countHistory(ctx, id, w); err != nil {
			return nil, err
		}
	}
	w.Runs = len(ids)
	for _, f := range []*float64{&w.Events, &w.WorkflowTasks, &w.Activities, &w.LocalActivities, &w.Timers, &w.Updates, &w.Signals, &w.Upserts, &w.Actions} {
		*f = math.Round(100**f/float64(len(ids))) / 100
	}
	return w, nil
}

func (b *bench) countHistory(ctx context.Context, id string, w *EngineWork) error {
	events, err := b.history(ctx, id)
	if err != nil {
		return err
	}
	tally(w, events)
	return nil
}

// tally adds one run's history to w.
func tally(w *EngineWork, events []*historypb.HistoryEvent) {
	w.Actions++ // the start
	localInTask := false
	for _, e := range events {
		w.Events++
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			w.WorkflowTasks++
			localInTask = false
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			w.Activities++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			w.Actions += float64(max(e.GetActivityTaskStartedEventAttributes().GetAttempt(), 1))
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if e.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
				w.LocalActivities++
				if !localInTask {
					w.Actions++
				}
				localInTask = true
			}
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			w.Timers++
			w.Actions++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			w.Updates++
			w.Actions++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			w.Signals++
			w.Actions++
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			w.Upserts++
			w.Actions++
		}
	}
}

// printEngine is the table of the engine's work per operation.
func printEngine(w io.Writer, rs []Result) {
	fmt.Fprintf(w, "\nTemporal's work per operation, from each scenario's first %d histories (actions: Temporal Cloud's, estimated):\n\n", engineSample)
	fmt.Fprintf(w, "| scenario | events | workflow tasks | activities | local activities | timers | updates | signals | upserts | actions |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		if e := r.Engine; e != nil {
			fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", r.Scenario,
				e.Events, e.WorkflowTasks, e.Activities, e.LocalActivities, e.Timers, e.Updates, e.Signals, e.Upserts, e.Actions)
		}
	}
}

// ratioFigure is v against base, met when the ratio, as reported, is at most max.
func ratioFigure(name string, v, base, max float64, target string) (Figure, bool) {
	if base <= 0 || v <= 0 {
		return Figure{}, false
	}
	r := math.Round(100*v/base) / 100
	return Figure{Name: name, Value: v, Baseline: base, Ratio: r, Target: target, Met: r <= max}, true
}

// engineFigures are a PAID order's cost in the engine's terms, and beside the
// peer's.
func engineFigures(rs []Result) []Figure {
	e2e, ok := find(rs, "6. ")
	if !ok {
		return nil
	}
	var out []Figure
	add := func(f Figure, ok bool) {
		if ok {
			out = append(out, f)
		}
	}
	temporal := func(r Result) float64 { return r.CPUPerOp["temporal"] + r.CPUPerOp["temporal db"] }
	shape, okShape := find(rs, "6b. ")
	if okShape {
		add(ratioFigure("Temporal's CPU ms per PAID order (vs raw workflow of the order's shape)", temporal(e2e), temporal(shape), 0.3, "≤ 0.3x"))
	}
	if e := e2e.Engine; e != nil {
		// 18 events: a paid order's history before the engine's share was cut.
		out = append(out, Figure{Name: "history events per PAID order", Value: e.Events, Target: "≤ 9", Met: e.Events <= 9},
			Figure{Name: "Temporal Cloud actions per PAID order (estimate)", Value: e.Actions, Target: "-", Met: true})
	}
	if peer, ok := find(rs, "6c. "); ok {
		add(ratioFigure("CPU ms per PAID order, every process (vs DBOS, order's shape)", cpuTotal(e2e), cpuTotal(peer), math.Inf(1), "-"))
		add(ratioFigure("p50 ms of a PAID order (vs DBOS, order's shape)", e2e.P50ms, peer.P50ms, math.Inf(1), "-"))
		if okShape {
			add(ratioFigure("CPU ms per raw Temporal workflow of the order's shape (vs DBOS's)", cpuTotal(shape), cpuTotal(peer), math.Inf(1), "-"))
		}
	}
	for _, w := range []struct{ prefix, name string }{{"8b. ", "Prefer: wait p50 ms at rest"}, {"8f. ", "Prefer: wait p50 ms at rest, eager dispatch"}} {
		if wait, ok := find(rs, w.prefix); ok {
			out = append(out, Figure{Name: w.name, Value: wait.P50ms, Target: "≤ 100 ms", Met: wait.P50ms <= 100})
		}
	}
	return out
}
