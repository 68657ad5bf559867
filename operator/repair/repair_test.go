package repair

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/reconcile"
)

// run is one run of the fake engine: its status, history and the request ID
// that created it.
type run struct {
	id, workflowID string
	status         enumspb.WorkflowExecutionStatus
	events         []enumspb.EventType
	createdBy      string
}

// engine is Temporal as a repair sees it: runs by workflow, the last one current;
// a reset makes a running run, and answers a request ID that made the current
// run with that run, as the server does.
type engine struct {
	runs     map[string][]*run
	listed   []*run // what the query lists, in order
	pageSize int
	resets   []*workflowservice.ResetWorkflowExecutionRequest
	refuse   map[string]bool // workflow IDs whose reset fails
	n        int
}

func newEngine() *engine {
	return &engine{runs: map[string][]*run{}, pageSize: 2, refuse: map[string]bool{}}
}

// add appends a run of workflowID in status st; listed puts it in the query's list.
func (e *engine) add(workflowID string, st enumspb.WorkflowExecutionStatus, listed bool) *run {
	e.n++
	r := &run{id: fmt.Sprintf("run-%d", e.n), workflowID: workflowID, status: st, events: orderHistory()}
	e.runs[workflowID] = append(e.runs[workflowID], r)
	if listed {
		e.listed = append(e.listed, r)
	}
	return r
}

// orderHistory is a run that recorded its order, paid, then failed in its fourth
// workflow task: tasks complete at events 4, 10, 16 and 19.
func orderHistory() []enumspb.EventType {
	started, sched, begun, done := enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
		enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
	act := []enumspb.EventType{enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED}
	h := []enumspb.EventType{started, sched, begun, done}
	h = append(append(h, act...), sched, begun, done)
	h = append(append(h, act...), sched, begun, done)
	return append(h, sched, begun, done, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED)
}

func (e *engine) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	from := 0
	if len(req.GetNextPageToken()) > 0 {
		if _, err := fmt.Sscan(string(req.GetNextPageToken()), &from); err != nil {
			return nil, err
		}
	}
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for i := from; i < len(e.listed) && i < from+e.pageSize; i++ {
		r := e.listed[i]
		resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{
			Execution: &commonpb.WorkflowExecution{WorkflowId: r.workflowID, RunId: r.id}, Status: r.status})
	}
	if from+e.pageSize < len(e.listed) {
		resp.NextPageToken = []byte(fmt.Sprint(from + e.pageSize))
	}
	return resp, nil
}

func (e *engine) DescribeWorkflowExecution(_ context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	runs := e.runs[workflowID]
	if len(runs) == 0 || runID != "" {
		return nil, errors.New("not found")
	}
	cur := runs[len(runs)-1]
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: cur.id}, Status: cur.status}}, nil
}

func (e *engine) GetWorkflowHistory(_ context.Context, workflowID, runID string, _ bool, _ enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	for _, r := range e.runs[workflowID] {
		if r.id == runID {
			return &events{types: r.events}
		}
	}
	return &events{err: errors.New("no such run")}
}

func (e *engine) ResetWorkflowExecution(_ context.Context, req *workflowservice.ResetWorkflowExecutionRequest) (*workflowservice.ResetWorkflowExecutionResponse, error) {
	wid := req.GetWorkflowExecution().GetWorkflowId()
	if e.refuse[wid] {
		return nil, errors.New("the frontend is unavailable")
	}
	runs := e.runs[wid]
	if cur := runs[len(runs)-1]; cur.createdBy == req.GetRequestId() {
		return &workflowservice.ResetWorkflowExecutionResponse{RunId: cur.id}, nil
	}
	e.resets = append(e.resets, req)
	r := e.add(wid, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, false)
	r.createdBy = req.GetRequestId()
	return &workflowservice.ResetWorkflowExecutionResponse{RunId: r.id}, nil
}

// events is a history iterator.
type events struct {
	types []enumspb.EventType
	i     int
	err   error
}

func (it *events) HasNext() bool { return it.err != nil || it.i < len(it.types) }

func (it *events) Next() (*historypb.HistoryEvent, error) {
	if it.err != nil {
		return nil, it.err
	}
	it.i++
	return &historypb.HistoryEvent{EventId: int64(it.i), EventType: it.types[it.i-1]}, nil
}

// findings records what a repair reports.
type findings struct{ got []reconcile.Finding }

func (f *findings) Record(_ context.Context, x reconcile.Finding) (bool, error) {
	f.got = append(f.got, x)
	return true, nil
}

func repairOf(t *testing.T, e *engine, o Options) Summary {
	t.Helper()
	if o.Query == "" {
		o.Query = "ExecutionStatus = 'Failed'"
	}
	r, err := New(e, "default", o)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestNewRefusesWhatItCannotRun(t *testing.T) {
	for _, o := range []Options{
		{Query: "  ", ResetTo: ResetLast},
		{Query: "ExecutionStatus = 'Failed'", ResetTo: "middle"},
		{Query: "ExecutionStatus = 'Failed'", ResetTo: ResetFirst, Rate: -1},
	} {
		if _, err := New(newEngine(), "default", o); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
}

// A repair resets each workflow's current run once, if it closed without
// completing; it leaves a superseded run, an open one, a completed one and a
// cancelled one alone. Run again, it resets nothing.
func TestRepairResetsOnlyCurrentRunsThatDidNotComplete(t *testing.T) {
	e := newEngine()
	failed := e.add("order:acme:http:k1", enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, true)
	e.add("order:acme:http:k2", enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, true) // superseded by:
	e.add("order:acme:http:k2", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, false)
	e.add("order:acme:http:k3", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, true)
	e.add("order:acme:http:k4", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, true)
	e.add("order:acme:http:k5", enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, true)
	terminated := e.add("order:acme:http:k6", enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, true)
	e.listed = append(e.listed, failed) // listed again, on a later page

	sum := repairOf(t, e, Options{ResetTo: ResetLast, Rate: 1000})
	want := map[string]int{SkipNotCurrent: 1, SkipRunning: 1, SkipCompleted: 1, SkipCanceled: 1, SkipListedAgain: 1}
	if sum.Listed != 7 || sum.Reset != 2 || sum.Failed != 0 || fmt.Sprint(sum.Skipped) != fmt.Sprint(want) {
		t.Fatalf("summary %s %v", sum, sum.Skipped)
	}
	for i, r := range []*run{failed, terminated} {
		got := e.resets[i]
		if got.GetWorkflowExecution().GetRunId() != r.id || got.GetWorkflowTaskFinishEventId() != 19 || got.GetRequestId() != requestID(r.workflowID, r.id) {
			t.Errorf("reset %d: %v", i, got)
		}
	}

	again := repairOf(t, e, Options{ResetTo: ResetLast, Rate: 1000})
	if again.Reset != 0 || again.Skipped[SkipNotCurrent] != 4 || len(e.resets) != 2 {
		t.Fatalf("second repair: %s %v; %d resets in all", again, again.Skipped, len(e.resets))
	}
	if !strings.Contains(again.String(), "reset 0,") {
		t.Errorf("summary line %q", again)
	}
}

// A reset retried with the request ID of one that made the current run resets
// nothing more: the server answers with that run.
func TestRequestIDIsTheRunsOwn(t *testing.T) {
	a, b := requestID("order:acme:http:k1", "run-1"), requestID("order:acme:http:k1", "run-2")
	if a == b || a != requestID("order:acme:http:k1", "run-1") || len(a) != 36 {
		t.Fatalf("request IDs %q %q", a, b)
	}
}

// A dry run lists what it would reset, with the reset event, and resets nothing.
func TestDryRunChangesNothing(t *testing.T) {
	e := newEngine()
	for i := range 5 {
		e.add(fmt.Sprintf("order:acme:http:k%d", i), enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, true)
	}
	r, err := New(e, "default", Options{Query: "ExecutionStatus = 'Failed'", ResetTo: ResetFirst, DryRun: true, Findings: &findings{}})
	if err != nil {
		t.Fatal(err)
	}
	var outs []Outcome
	sum, err := r.Run(context.Background(), func(o Outcome) { outs = append(outs, o) })
	if err != nil {
		t.Fatal(err)
	}
	if sum.WouldReset != 5 || sum.Reset != 0 || len(e.resets) != 0 || len(outs) != 5 {
		t.Fatalf("dry run: %s, %d resets, %d outcomes", sum, len(e.resets), len(outs))
	}
	if o := outs[0]; o.Action != ActionWouldReset || o.ResetEvent != 4 || o.Status != "Failed" || o.RunID == "" {
		t.Errorf("outcome %+v", o)
	}
}

// A run whose reset fails is counted and recorded as a finding of its order; the
// repair goes on with the others.
func TestAFailedResetIsAFinding(t *testing.T) {
	e := newEngine()
	bad := e.add("order:acme:http:k1", enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, true)
	e.add("order:acme:http:k2", enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, true)
	e.refuse[bad.workflowID] = true
	f := &findings{}
	sum := repairOf(t, e, Options{ResetTo: ResetLast, Rate: 1000, Findings: f})
	if sum.Failed != 1 || sum.Reset != 1 || len(f.got) != 1 {
		t.Fatalf("summary %s, findings %v", sum, f.got)
	}
	got := f.got[0]
	if got.Kind != reconcile.KindRepairFailed || got.Action != reconcile.ActionFailed || got.OrderID != order.IDFor(bad.workflowID) ||
		got.Tenant != "acme" || got.ProviderID != bad.id || !strings.Contains(got.Detail, "unavailable") {
		t.Errorf("finding %+v", got)
	}
}

// The reset points are the CLI's: the first or last completed workflow task, or
// the event after the first scheduled one when none completed.
func TestResetPoints(t *testing.T) {
	sched, begun := enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED
	for _, row := range []struct {
		to     ResetTo
		events []enumspb.EventType
		want   int64
	}{
		{ResetFirst, orderHistory(), 4},
		{ResetLast, orderHistory(), 19},
		{ResetLast, []enumspb.EventType{enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, sched, begun, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, sched, begun}, 3},
		{ResetFirst, []enumspb.EventType{enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED}, 0},
	} {
		e := newEngine()
		r := e.add("order:acme:http:k1", enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, true)
		r.events = row.events
		rep, err := New(e, "default", Options{Query: "x", ResetTo: row.to})
		if err != nil {
			t.Fatal(err)
		}
		got, err := rep.resetEvent(context.Background(), r.workflowID, r.id)
		if got != row.want || (row.want == 0) != errors.Is(err, errNoTask) {
			t.Errorf("%s of %v: %d, %v; want %d", row.to, row.events, got, err, row.want)
		}
	}
}
