// Package shadow replays what runs now against this build before it rolls out:
// every running workflow and those of its types closed lately, each history
// fetched, replayed and dropped. A run fails when the build's commands differ from its history
// (Temporal's own check), when the build cannot read it, or when an activity it
// schedules carries a different provider key, amount, currency or target than
// the history's, even where Temporal's check passes.
package shadow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
)

// Options select the runs a Shadow checks.
type Options struct {
	// Query is a visibility query ANDed with the default selection: every
	// running run, and those closed within Since.
	Query string
	// Since is how long ago a closed run may have closed; 0: running runs only.
	Since time.Duration
	// Limit is the most histories checked; 0: no limit.
	Limit int
	// PerTenant is the most histories of one tenant (its OrderflowTenant); 0: no cap.
	PerTenant int
	// Progress receives a progress line at most every 2 s; nil for none.
	Progress io.Writer
}

// Shadow checks the runs a namespace holds against a build's workflows.
type Shadow struct {
	temporal  client.Client
	namespace string
	check     *Checker
	o         Options
}

// New checks runs of namespace, listed and read through c, against the
// workflows register registers; dc opens their payloads (the deployment's
// codec), extra interceptors wrap the workflows (see NewChecker).
func New(c client.Client, namespace string, dc converter.DataConverter, register func(sdkworker.WorkflowRegistry), o Options, extra ...interceptor.WorkerInterceptor) (*Shadow, error) {
	if c == nil || namespace == "" {
		return nil, errors.New("shadow: a Temporal client and a namespace are required")
	}
	if o.Since < 0 || o.Limit < 0 || o.PerTenant < 0 {
		return nil, errors.New("shadow: since, limit and per-tenant cannot be negative")
	}
	check, err := NewChecker(dc, register, extra...)
	if err != nil {
		return nil, err
	}
	return &Shadow{temporal: c, namespace: namespace, check: check, o: o}, nil
}

// Summary is what a Run checked.
type Summary struct {
	Checked, Open, Closed int
	// Failed are the histories that failed, and ByKind the same counted by each
	// one's first failure.
	Failed int
	ByKind map[Kind]int
	Took   time.Duration
}

// Run checks every selected run, page by page, one history in memory at a time,
// and hands each failed one to failed as it is found.
func (s *Shadow) Run(ctx context.Context, failed func(Result)) (Summary, error) {
	start := time.Now()
	sum := Summary{ByKind: map[Kind]int{}}
	p := newProgress(s.o.Progress, start)
	sel := newSelection(s.o)
	query := Query(s.o.Query, s.o.Since, start)
	var token []byte
	for {
		page, err := s.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: s.namespace, PageSize: 100, NextPageToken: token, Query: query,
		})
		if err != nil {
			return sum, fmt.Errorf("list workflows (%s): %w", query, err)
		}
		for _, ex := range page.GetExecutions() {
			if sel.full(sum.Checked) {
				sum.Took = time.Since(start)
				return sum, nil
			}
			if !sel.admit(ex) {
				continue
			}
			r, err := s.one(ctx, ex)
			if errors.Is(err, errGone) {
				continue
			}
			if err != nil {
				return sum, err
			}
			sum.add(r)
			if !r.OK() && failed != nil {
				failed(r)
			}
			p.tick(sum)
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			sum.Took = time.Since(start)
			return sum, nil
		}
	}
}

func (sum *Summary) add(r Result) {
	sum.Checked++
	if r.Open {
		sum.Open++
	} else {
		sum.Closed++
	}
	if !r.OK() {
		sum.Failed++
		sum.ByKind[r.Failures[0].Kind]++
	}
}

// errGone is a run whose history went (retention) between its listing and its read.
var errGone = errors.New("history gone")

// one fetches and checks one run's history. A closed run of a type this build
// does not register is only counted: nothing of this build replays it.
func (s *Shadow) one(ctx context.Context, ex *workflowpb.WorkflowExecutionInfo) (Result, error) {
	id, run := ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()
	open := ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	if !open && !s.check.registers(ex.GetType().GetName()) {
		return Result{WorkflowID: id, RunID: run, WorkflowType: ex.GetType().GetName()}, nil
	}
	it := s.temporal.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		var missing *serviceerror.NotFound
		if errors.As(err, &missing) {
			return Result{}, errGone
		}
		if err != nil {
			return Result{}, fmt.Errorf("history of %s run %s: %w", id, run, err)
		}
		h.Events = append(h.Events, e)
	}
	if len(h.GetEvents()) == 0 {
		return Result{}, errGone
	}
	r := s.check.Check(id, run, h)
	r.Open = open
	return r, nil
}
