package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/orderflow/orderflow/customers/erasure"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/personal"
	"github.com/orderflow/orderflow/platform/records"
)

// temporalErasures lists completed erasures and reads each one's input and
// receipt through the codec's data converter (both are sealed).
type temporalErasures struct {
	c         client.Client
	namespace string
	dc        converter.DataConverter
}

// Completed lists the runs query selects, page by page.
func (t temporalErasures) Completed(ctx context.Context, query string, each func(erasureRun) error) error {
	var token []byte
	for {
		page, err := t.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: t.namespace, PageSize: 100, NextPageToken: token, Query: query})
		if err != nil {
			return fmt.Errorf("list erasures (%s): %w", query, err)
		}
		for _, ex := range page.GetExecutions() {
			r, err := t.read(ctx, ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId())
			if err != nil {
				return err
			}
			r.ClosedAt = ex.GetCloseTime().AsTime()
			if err := each(r); err != nil {
				return err
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}

// read is a run's input (its first event) and result (its close event).
func (t temporalErasures) read(ctx context.Context, id, run string) (erasureRun, error) {
	r := erasureRun{WorkflowID: id}
	first, err := t.event(ctx, id, run, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if err != nil {
		return r, err
	}
	if err := t.dc.FromPayloads(first.GetWorkflowExecutionStartedEventAttributes().GetInput(), &r.Input); err != nil {
		return r, fmt.Errorf("input of %s (are PAYLOAD_KEYS the deployment's?): %w", id, err)
	}
	last, err := t.event(ctx, id, run, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	if err != nil {
		return r, err
	}
	if err := t.dc.FromPayloads(last.GetWorkflowExecutionCompletedEventAttributes().GetResult(), &r.Receipt); err != nil {
		return r, fmt.Errorf("receipt of %s: %w", id, err)
	}
	return r, nil
}

// event is the first event of a run's history under filter.
func (t temporalErasures) event(ctx context.Context, id, run string, filter enumspb.HistoryEventFilterType) (*historypb.HistoryEvent, error) {
	it := t.c.GetWorkflowHistory(ctx, id, run, false, filter)
	if !it.HasNext() { // Next would panic
		return nil, fmt.Errorf("history of %s: empty (past its retention?)", id)
	}
	e, err := it.Next()
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", id, err)
	}
	return e, nil
}

// dbErasures are the stores an erasure changes: the customer's keys, the stored
// answers its activities scrub, and its own record.
type dbErasures struct {
	db      *pgxpool.Pool
	keys    *custkeys.Store
	acts    *erasure.Activities
	records *records.Store
}

// Pending counts the customer's live keys and the stored answers that still
// hold a customer ID (those ErasureScrub selects, the customer's orders'
// answers, whose customer_id is a string but not the one it writes), and
// whether the erasure's record lacks its receipt.
func (d dbErasures) Pending(ctx context.Context, r erasureRun) (pending, error) {
	in := r.Input
	var p pending
	err := d.db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM customer_keys WHERE tenant = $1 AND customer_hash = $2 AND destroyed_at IS NULL),
		       (SELECT count(*) FROM idempotency_keys i JOIN orders o ON o.workflow_id = i.workflow_id
		        WHERE o.tenant = $1 AND o.customer_hash = $2 AND i.tenant = $1
		          AND position($3::bytea IN i.response_body) > 0 AND position($4::bytea IN i.response_body) = 0)`,
		in.Tenant, in.CustomerHash, []byte(`"customer_id":"`), []byte(`"customer_id":"`+personal.Erased+`"`)).Scan(&p.Keys, &p.Answers)
	if err != nil {
		return p, fmt.Errorf("what a restore brought back: %w", err)
	}
	if r.Receipt.Signature == "" {
		return p, nil // nothing to put back
	}
	rec, err := d.records.GetByWorkflow(ctx, in.Tenant, r.WorkflowID)
	switch {
	case errors.Is(err, records.ErrNotFound):
		p.Receipt = true
	case err != nil:
		return p, err
	default:
		p.Receipt = !rec.Final
	}
	return p, nil
}

// Apply scrubs the stored answers and destroys the keys, as the erasure did,
// then puts its receipt back in its record: a record restored from before the
// erasure answered would say WAITING forever.
func (d dbErasures) Apply(ctx context.Context, r erasureRun) error {
	in := r.Input
	if _, err := d.acts.ErasureScrub(ctx, in); err != nil {
		return err
	}
	if _, err := d.keys.Destroy(ctx, in.Tenant, in.CustomerHash); err != nil {
		return err
	}
	if r.Receipt.Signature == "" {
		return nil
	}
	body, err := json.Marshal(erasure.Answer{ID: in.ID, Status: erasure.StatusErased, Receipt: &r.Receipt})
	if err != nil {
		return fmt.Errorf("encode the erasure's answer: %w", err)
	}
	// Record writes it if the record is gone; Move, if it is there and not final.
	if _, err := d.records.Record(ctx, records.Record{Tenant: in.Tenant, Kind: erasure.KindName, ID: in.ID,
		WorkflowID: r.WorkflowID, Status: erasure.StatusErased, Final: true, Fingerprint: in.Print, Body: body}); err != nil {
		return err
	}
	_, err = d.records.Move(ctx, in.Tenant, r.WorkflowID, erasure.StatusErased, true, body)
	return err
}
