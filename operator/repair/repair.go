// Package repair re-runs in bulk the workflows a bad deploy failed: each listed
// workflow's current run, if it closed without completing, is reset to its first
// or last workflow task, at a bounded rate. A re-run order sends the provider the
// keys of its first run (order.PaymentKey derives them from the workflow ID), so
// the provider answers with the intent it already has: nothing is charged twice.
//
// Temporal's server-side batch reset resets every run its query lists, superseded
// runs included: a second batch would reset an old run again and end the run the
// first one made. A repair resets only a workflow's current run, one by one.
package repair

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/time/rate"

	"github.com/orderflow/orderflow/payments/reconcile"
)

// ResetTo is where a run is reset to.
type ResetTo string

// The reset points, as `temporal workflow reset --type` finds them.
const (
	// ResetFirst re-runs the workflow from its first workflow task.
	ResetFirst ResetTo = "first"
	// ResetLast re-runs only the last workflow task that completed: what the
	// workflow did before it stays done.
	ResetLast ResetTo = "last"
)

// Actions taken on a listed run (Outcome.Action).
const (
	ActionReset      = "reset"
	ActionWouldReset = "would_reset" // a dry run
	ActionSkipped    = "skipped"
	ActionFailed     = "failed"
)

// Why a listed run is not reset (Outcome.Reason, Summary.Skipped).
const (
	// SkipNotCurrent: a later run of the workflow exists (a reset made it, or the
	// workflow went on): resetting this one would end that one.
	SkipNotCurrent = "not_current"
	// SkipListedAgain: the workflow's current run was handled already in this repair.
	SkipListedAgain = "listed_again"
	// SkipRunning: the run is open; a worker of good code takes it without a reset.
	SkipRunning = "running"
	// SkipCompleted: the run did what it was for.
	SkipCompleted = "completed"
	// SkipCanceled: someone asked for it to end; a repair never undoes a cancel.
	SkipCanceled = "canceled"
)

// DefaultRate is the resets per second when Options.Rate is 0.
const DefaultRate = 10

// progressEvery is the least time between two progress lines.
const progressEvery = 2 * time.Second

// pageSize is how many runs one visibility page holds.
const pageSize = 100

// Engine is the part of the Temporal client a repair uses (client.Client).
type Engine interface {
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
	GetWorkflowHistory(ctx context.Context, workflowID, runID string, isLongPoll bool, filterType enumspb.HistoryEventFilterType) client.HistoryEventIterator
	ResetWorkflowExecution(ctx context.Context, request *workflowservice.ResetWorkflowExecutionRequest) (*workflowservice.ResetWorkflowExecutionResponse, error)
}

// Findings is where a run that could not be reset is recorded (reconcile.Store),
// so `worker findings list` shows it.
type Findings interface {
	Record(ctx context.Context, f reconcile.Finding) (bool, error)
}

// Options say what a repair resets, and how.
type Options struct {
	// Query is a visibility query that lists the runs to repair (required).
	Query   string
	ResetTo ResetTo
	// Rate is the resets per second; 0 is DefaultRate.
	Rate float64
	// DryRun lists what a repair would do and changes nothing.
	DryRun bool
	// Reason is recorded with each reset.
	Reason string
	// Findings records the runs that could not be reset; nil records none.
	Findings Findings
	// Progress receives a line at most every 2 s; nil for none.
	Progress io.Writer
}

// Repair resets the runs of a query.
type Repair struct {
	engine    Engine
	namespace string
	o         Options
	limit     *rate.Limiter
}

// New returns a repair of namespace's workflows through engine, or an error for
// options it cannot run with.
func New(engine Engine, namespace string, o Options) (*Repair, error) {
	o.Query = strings.TrimSpace(o.Query)
	switch {
	case engine == nil:
		return nil, errors.New("repair: no Temporal client")
	case o.Query == "":
		return nil, errors.New("repair: a query is required: an empty one would list every workflow")
	case o.ResetTo != ResetFirst && o.ResetTo != ResetLast:
		return nil, fmt.Errorf("repair: reset to %q: want %q or %q", o.ResetTo, ResetFirst, ResetLast)
	case o.Rate < 0:
		return nil, fmt.Errorf("repair: rate %v: want a positive number of resets a second", o.Rate)
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if strings.TrimSpace(o.Reason) == "" {
		o.Reason = "orderflow repair"
	}
	return &Repair{engine: engine, namespace: namespace, o: o, limit: rate.NewLimiter(rate.Limit(o.Rate), 1)}, nil
}

// Outcome is what a repair did with one listed run.
type Outcome struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Status is the run's, as the engine describes it when it is examined.
	Status     string `json:"status"`
	ResetEvent int64  `json:"reset_event,omitempty"`
	Action     string `json:"action"`
	// Reason says why it was skipped, or why it failed.
	Reason   string `json:"reason,omitempty"`
	NewRunID string `json:"new_run_id,omitempty"`
}

// Summary counts what a repair did: Listed is the sum of the others.
type Summary struct {
	Listed     int            `json:"listed"`
	Reset      int            `json:"reset"`
	WouldReset int            `json:"would_reset"`
	Skipped    map[string]int `json:"skipped"`
	Failed     int            `json:"failed"`
	DryRun     bool           `json:"dry_run"`
}

func (s *Summary) add(o Outcome) {
	s.Listed++
	switch o.Action {
	case ActionReset:
		s.Reset++
	case ActionWouldReset:
		s.WouldReset++
	case ActionSkipped:
		s.Skipped[o.Reason]++
	default:
		s.Failed++
	}
}

// String is the summary on one line.
func (s Summary) String() string {
	skipped := 0
	var reasons []string
	for _, r := range slices.Sorted(maps.Keys(s.Skipped)) {
		skipped += s.Skipped[r]
		reasons = append(reasons, fmt.Sprintf("%s %d", r, s.Skipped[r]))
	}
	done := fmt.Sprintf("reset %d", s.Reset)
	if s.DryRun {
		done = fmt.Sprintf("would reset %d (dry run)", s.WouldReset)
	}
	line := fmt.Sprintf("listed %d, %s, skipped %d, failed %d", s.Listed, done, skipped, s.Failed)
	if len(reasons) > 0 {
		line += " (skipped: " + strings.Join(reasons, ", ") + ")"
	}
	return line
}

// Run lists the query's runs page by page and handles each, passing each outcome
// to each (nil for none). A run that cannot be reset is counted, recorded as a
// finding, and the repair goes on; the error is for a list that fails, an ended
// context, or a finding that cannot be stored. Run again, it resets nothing it
// reset before: those runs are no longer their workflow's current run, and a
// retried reset carries the request ID of the first.
func (r *Repair) Run(ctx context.Context, each func(Outcome)) (Summary, error) {
	sum := Summary{Skipped: map[string]int{}, DryRun: r.o.DryRun}
	handled := map[string]bool{}
	last := time.Now()
	var token []byte
	for {
		page, err := r.engine.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: r.namespace, Query: r.o.Query, PageSize: pageSize, NextPageToken: token})
		if err != nil {
			return sum, fmt.Errorf("list %q: %w", r.o.Query, err)
		}
		for _, e := range page.GetExecutions() {
			out, err := r.one(ctx, e, handled)
			if err != nil {
				return sum, err
			}
			sum.add(out)
			if each != nil {
				each(out)
			}
			if r.o.Progress != nil && time.Since(last) >= progressEvery {
				fmt.Fprintf(r.o.Progress, "repair: %s\n", sum)
				last = time.Now()
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return sum, nil
		}
	}
}
