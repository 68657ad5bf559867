package repair

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/orderflow/orderflow/tenants"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/redact"
)

// maxDetail bounds the error text an outcome and its finding keep.
const maxDetail = 500

// one handles a listed run: it is reset (or would be, in a dry run) when it is
// its workflow's current run and closed without completing. handled holds the
// workflows whose current run this repair has seen.
func (r *Repair) one(ctx context.Context, e *workflowpb.WorkflowExecutionInfo, handled map[string]bool) (Outcome, error) {
	wid, rid := e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()
	out := Outcome{WorkflowID: wid, RunID: rid, Status: e.GetStatus().String()}
	if handled[wid] {
		out.Action, out.Reason = ActionSkipped, SkipListedAgain
		return out, nil
	}
	d, err := r.engine.DescribeWorkflowExecution(ctx, wid, "")
	if err != nil {
		return r.failed(ctx, out, fmt.Errorf("describe the workflow: %w", err))
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetExecution().GetRunId() != rid {
		out.Action, out.Reason = ActionSkipped, SkipNotCurrent
		return out, nil
	}
	handled[wid] = true
	out.Status = info.GetStatus().String()
	if reason := skipped(info.GetStatus()); reason != "" {
		out.Action, out.Reason = ActionSkipped, reason
		return out, nil
	}
	if out.ResetEvent, err = r.resetEvent(ctx, wid, rid); err != nil {
		return r.failed(ctx, out, err)
	}
	if r.o.DryRun {
		out.Action = ActionWouldReset
		return out, nil
	}
	if err := r.limit.Wait(ctx); err != nil {
		return out, fmt.Errorf("wait to reset %s: %w", wid, err)
	}
	resp, err := r.engine.ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace: r.namespace, WorkflowExecution: e.GetExecution(), Reason: r.o.Reason,
		WorkflowTaskFinishEventId: out.ResetEvent, RequestId: requestID(wid, rid),
	})
	if err != nil {
		return r.failed(ctx, out, fmt.Errorf("reset to event %d: %w", out.ResetEvent, err))
	}
	out.Action, out.NewRunID = ActionReset, resp.GetRunId()
	return out, nil
}

// skipped is why a current run in status st is not reset; "" when it is. Only a
// run that closed without completing, and not by a cancel someone asked for, is.
func skipped(st enumspb.WorkflowExecutionStatus) string {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return ""
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return SkipRunning
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return SkipCompleted
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return SkipCanceled
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return SkipNotCurrent
	}
	return strings.ToLower(st.String())
}

// requestID is the reset's request ID, the same for every attempt to reset the
// run: Temporal answers a reset whose ID made the current run with that run, so a
// repair retried resets once.
func requestID(workflowID, runID string) string {
	sum := sha256.Sum256([]byte("orderflow-repair\x00" + workflowID + "\x00" + runID))
	h := hex.EncodeToString(sum[:16])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// failed counts a run that could not be reset and records it as a finding, unless
// the repair is a dry run. An ended context ends the repair instead: every later
// call would fail too.
func (r *Repair) failed(ctx context.Context, out Outcome, err error) (Outcome, error) {
	if ctx.Err() != nil {
		return out, err
	}
	out.Action, out.Reason = ActionFailed, detail(err)
	if r.o.DryRun || r.o.Findings == nil {
		return out, nil
	}
	if _, rerr := r.o.Findings.Record(ctx, finding(out)); rerr != nil {
		return out, fmt.Errorf("record that run %s of %s was not reset: %w", out.RunID, out.WorkflowID, rerr)
	}
	return out, nil
}

// detail is err's text for an outcome: without what a thief would want, and
// bounded.
func detail(err error) string {
	s := redact.Secrets(err.Error())
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "…"
	}
	return s
}

// finding is a run that could not be reset, as the findings store keeps it: one
// per run (its provider_id holds the run), its order and tenant when the workflow
// ID names them.
func finding(out Outcome) reconcile.Finding {
	f := reconcile.Finding{Kind: reconcile.KindRepairFailed, Action: reconcile.ActionFailed, ProviderID: out.RunID,
		Detail: fmt.Sprintf("workflow %s run %s (%s) was not reset: %s", out.WorkflowID, out.RunID, out.Status, out.Reason)}
	parts := strings.SplitN(out.WorkflowID, ":", 3)
	if len(parts) == 3 && tenants.Valid(parts[1]) {
		f.Tenant = parts[1]
		if parts[0] == order.Kind {
			f.OrderID = order.IDFor(out.WorkflowID)
		}
	}
	return f
}
