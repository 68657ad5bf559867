package shadow

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Checker replays one history at a time against a build's workflows, and holds
// the activities it schedules against those the history scheduled.
type Checker struct {
	dc       converter.DataConverter
	fc       converter.FailureConverter
	register func(sdkworker.WorkflowRegistry)
	extra    []interceptor.WorkerInterceptor
	types    []string
	logger   tlog.Logger
}

// NewChecker checks histories against the workflows register registers, read
// with dc (the deployment's codec; failures decoded as payloadcodec.Converters
// encodes them). extra interceptors wrap the workflows as a worker's would; the
// activities are noted after them, as the worker would send them.
func NewChecker(dc converter.DataConverter, register func(sdkworker.WorkflowRegistry), extra ...interceptor.WorkerInterceptor) (*Checker, error) {
	if dc == nil || register == nil {
		return nil, errors.New("shadow: a data converter and a registration are required")
	}
	n := &names{}
	register(n)
	if len(n.types) == 0 {
		return nil, errors.New("shadow: the registration names no workflow type")
	}
	fc := temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
	// The replayed code's own log lines are not the report.
	logger := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	return &Checker{dc: dc, fc: fc, register: register, extra: extra, types: n.types, logger: logger}, nil
}

// registers is whether the build registers workflow type name.
func (c *Checker) registers(name string) bool { return slices.Contains(c.types, name) }

// Check replays the history of one run (workflowID, runID: the code sees them as
// it did) and returns what differs.
func (c *Checker) Check(workflowID, runID string, h *historypb.History) Result {
	res := Result{WorkflowID: workflowID, RunID: runID}
	if events := h.GetEvents(); len(events) > 0 && events[0].GetWorkflowExecutionStartedEventAttributes() != nil {
		started := events[0].GetWorkflowExecutionStartedEventAttributes()
		res.WorkflowType = started.GetWorkflowType().GetName()
		if !c.registers(res.WorkflowType) {
			return res.fail(Failure{Kind: Replay, Event: "WorkflowExecutionStarted",
				Message: fmt.Sprintf("workflow type %s is not registered in this build: no worker of it can run this run", res.WorkflowType)})
		}
		// A build that cannot open a run's input cannot run it.
		if _, err := payloadsJSON(c.dc, started.GetInput()); err != nil {
			return res.fail(Failure{Kind: Undecodable, Event: "WorkflowExecutionStarted", Message: err.Error()})
		}
	}
	if !decided(h) {
		return res // no workflow task completed: this build runs it from its start
	}
	rec := &recorder{}
	r, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{
		DataConverter: c.dc, FailureConverter: c.fc,
		// First, so it sees the calls as the other interceptors leave them.
		Interceptors: append([]interceptor.WorkerInterceptor{rec}, c.extra...),
	})
	if err != nil {
		return res.fail(Failure{Kind: Replay, Message: fmt.Sprintf("replayer: %v", err)})
	}
	// A replayer per history: it keeps every run's result, which would grow.
	c.register(r)
	err = r.ReplayWorkflowHistoryWithOptions(c.logger, h, sdkworker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: workflowID, RunID: runID},
	})
	if err != nil {
		return res.fail(replayFailure(err, h))
	}
	for _, f := range c.effects(h, rec.calls) {
		res = res.fail(f)
	}
	return res
}

// decided is whether a workflow task of h completed: whether code made commands.
func decided(h *historypb.History) bool {
	for _, e := range h.GetEvents() {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			return true
		}
	}
	return false
}

func (r Result) fail(f Failure) Result {
	f.WorkflowID, f.RunID = r.WorkflowID, r.RunID
	r.Failures = append(r.Failures, f)
	return r
}

// effects holds the i-th activity the replay scheduled against the history's
// i-th ActivityTaskScheduled; calls past the history's end are new work.
func (c *Checker) effects(h *historypb.History, calls []call) []Failure {
	var out []Failure
	i := 0
	for _, e := range h.GetEvents() {
		if i >= len(calls) {
			break
		}
		if e.GetEventType() != enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			continue
		}
		out = append(out, c.effect(e, calls[i])...)
		i++
	}
	return out
}

// effect compares one scheduled activity with the call the replay made for it.
func (c *Checker) effect(e *historypb.HistoryEvent, got call) []Failure {
	a := e.GetActivityTaskScheduledEventAttributes()
	base := Failure{Kind: Effect, Event: "ActivityTaskScheduled", ActivityType: a.GetActivityType().GetName(), ScheduledEventID: e.GetEventId()}
	was, err := payloadsJSON(c.dc, a.GetInput())
	if err != nil {
		base.Kind, base.Message = Undecodable, err.Error()
		return []Failure{base}
	}
	if got.err != nil {
		base.Kind, base.Message = Replay, got.err.Error()
		return []Failure{base}
	}
	diffs, err := compare(was, got.args)
	if err != nil {
		base.Kind, base.Message = Replay, err.Error()
		return []Failure{base}
	}
	out := make([]Failure, 0, len(diffs))
	for _, d := range diffs {
		f := base
		f.Path, f.Recorded, f.Produced = d.path, d.recorded, d.produced
		out = append(out, f)
	}
	return out
}
