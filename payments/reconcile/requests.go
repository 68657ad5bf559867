package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
)

// Kinds and actions of the refund requests' side.
const (
	// KindRefundWorkflowEnded: a refund request still PENDING whose workflow is
	// not running (terminated, lost with the engine's state, or never started
	// after a restore brought the row back).
	KindRefundWorkflowEnded = "refund_workflow_ended"
	// ActionReservationReleased: the provider holds no refund of the request, so
	// nothing moved: it ends FAILED and its reservation is released.
	ActionReservationReleased = "reservation_released"
	// ActionRefundSettled: the provider holds the request's refund: it ends
	// SUCCEEDED, and the order follows its payment.
	ActionRefundSettled = "refund_settled"
	// KindRefundRowLost: the provider holds a refund request's refund whose row
	// the table lost (a restore, a failover); the row is rebuilt (ActionRebuilt).
	KindRefundRowLost = "refund_row_lost"
)

// refundWorkflowField is the refund metadata that names the request's workflow
// (activities' refundWorkflowField).
const refundWorkflowField = "orderflow_refund_workflow"

// FailureWorkflowEnded is the failure of a refund request whose workflow ended
// with nothing at the provider.
const FailureWorkflowEnded = "workflow_ended: the refund's workflow ended before its refund was sent"

// Requests are the refund requests as a pass sees them (Store).
type Requests interface {
	// StaleRefunds returns up to limit PENDING refund requests whose last change
	// is older than before, oldest first.
	StaleRefunds(ctx context.Context, before time.Time, limit int) ([]refundstore.Row, error)
	// SettleRefund ends a request SUCCEEDED as the provider shows it; ReleaseRefund
	// ends a PENDING one FAILED, its reservation released. True when it changed.
	SettleRefund(ctx context.Context, id, providerRefundID string, amount int64) (bool, error)
	ReleaseRefund(ctx context.Context, id, failure string) (bool, error)
	// RebuildRefund writes back a request's row that the table lost, SUCCEEDED
	// as the provider holds its refund; true when it wrote.
	RebuildRefund(ctx context.Context, r refund.Refund, providerRefundID string, amount int64, currency string) (bool, error)
}

// IntentRefunds lists an intent's refunds (a consistent read).
type IntentRefunds interface {
	IntentRefunds(ctx context.Context, intentID string) ([]provider.Refund, error)
}

// A pass finds these by assertion: what the worker passes New must have them,
// or refund requests would go unreconciled without a word.
var (
	_ Requests      = (*Store)(nil)
	_ Requests      = Reopening{}
	_ IntentRefunds = (*provider.Client)(nil)
)

// StaleRefunds returns the PENDING refund requests last changed before before.
func (s *Store) StaleRefunds(ctx context.Context, before time.Time, limit int) ([]refundstore.Row, error) {
	return s.refunds.Stale(ctx, before, limit)
}

// SettleRefund ends the request SUCCEEDED with the provider's refund.
func (s *Store) SettleRefund(ctx context.Context, id, providerRefundID string, amount int64) (bool, error) {
	return s.refunds.Settle(ctx, id, providerRefundID, amount)
}

// RebuildRefund writes back a request's row as the provider holds its refund.
func (s *Store) RebuildRefund(ctx context.Context, r refund.Refund, providerRefundID string, amount int64, currency string) (bool, error) {
	return s.refunds.Rebuild(ctx, r, providerRefundID, amount, currency)
}

// ReleaseRefund ends a PENDING request FAILED with failure.
func (s *Store) ReleaseRefund(ctx context.Context, id, failure string) (bool, error) {
	return s.refunds.Fail(ctx, id, failure)
}

// requestsSide ends each refund request left PENDING by a workflow that is not
// running: a reservation is not money, so one that no run will send must not
// hold part of its order's charge (later refunds and the cancel wait on it). The
// provider decides how it ends: its refund of the request, if any, is the
// request's (SUCCEEDED, and the order follows); none, and a reserved one ends
// FAILED. One that reserved nothing holds nothing: it ends FAILED only once its
// key is forgotten (a day), since its start may still come. A run that is still
// sending settles a released row again when its refund lands (the provider's
// word is final). A failure is a finding; the next pass tries again.
func (r *Reconciler) requestsSide(ctx context.Context, p *pass) error {
	rq, ok := r.findings.(Requests)
	lists, listsOK := r.provider.(IntentRefunds)
	if !ok || !listsOK {
		return nil
	}
	stale, err := rq.StaleRefunds(ctx, p.start.Add(-r.opts.Grace), maxUnsettled)
	if err != nil {
		return fmt.Errorf("read pending refund requests: %w", err)
	}
	for _, row := range stale {
		f := Finding{Kind: KindRefundWorkflowEnded, OrderID: row.OrderID, Tenant: row.Tenant, ProviderID: row.ID,
			Amount: row.Amount, Currency: row.Currency}
		if err := r.endStale(ctx, p, rq, lists, row, f); err != nil {
			if ferr := r.failed(ctx, p, f, err); ferr != nil {
				return ferr
			}
		}
	}
	return nil
}

// endStale ends one stale request, unless its workflow runs.
func (r *Reconciler) endStale(ctx context.Context, p *pass, rq Requests, lists IntentRefunds, row refundstore.Row, f Finding) error {
	running, err := r.engine.Running(ctx, row.WorkflowID)
	if err != nil || running {
		return err
	}
	intent, err := r.ledger.IntentOfOrder(ctx, row.OrderID)
	if err != nil {
		return err
	}
	var made *provider.Refund
	if intent != "" {
		refunds, err := lists.IntentRefunds(ctx, intent)
		p.rep.ProviderRequests++
		if err != nil {
			return fmt.Errorf("list the refunds of %s: %w", intent, err)
		}
		for i, re := range refunds {
			if re.Metadata[refundRequestField] == row.ID && (re.Status == "succeeded" || re.Status == "pending") {
				made = &refunds[i]
			}
		}
	}
	if made == nil && row.Amount == 0 && row.UpdatedAt.After(p.start.Add(-keyLife)) {
		// Nothing reserved, so nothing held: its workflow may not have started
		// yet (Temporal down when it was asked), and the client's retry starts it.
		return nil
	}
	if made == nil {
		f.Action, f.Detail = ActionReservationReleased, "its workflow ended with no refund at the provider: "+string(refund.StatusFailed)
		if _, err := rq.ReleaseRefund(ctx, row.ID, FailureWorkflowEnded); err != nil {
			return err
		}
		return r.record(ctx, p, f)
	}
	f.Action, f.Detail, f.Amount = ActionRefundSettled, "its workflow ended; the provider holds its refund "+made.ID, made.Amount
	if _, err := rq.SettleRefund(ctx, row.ID, made.ID, made.Amount); err != nil {
		return err
	}
	orders, err := r.orders.Standings(ctx, []string{row.OrderID})
	if err != nil {
		return err
	}
	if st, ok := orders[row.OrderID]; ok && order.AfterPayment(st.Status) {
		o := order.Order{ID: row.OrderID, Tenant: st.Tenant, WorkflowID: st.WorkflowID, Amount: st.Amount, Currency: st.Currency}
		if err := r.engine.Follow(ctx, o, intent, made.ID); err != nil {
			return err
		}
	}
	return r.record(ctx, p, f)
}

// rebuildRequest writes back the row of the refund request that made re, when
// the table lost it: the refund's metadata names the request and its workflow,
// the ledger the order, the order its tenant. A refund made before requests
// named their workflow is left to the finding that the request does not show it.
func (r *Reconciler) rebuildRequest(ctx context.Context, p *pass, re provider.Refund) error {
	rq, ok := r.findings.(Requests)
	id, wf := re.Metadata[refundRequestField], re.Metadata[refundWorkflowField]
	if !ok || id == "" || wf == "" || refund.IDFor(wf) != id {
		return nil
	}
	orderID, err := r.ledger.OrderOfIntent(ctx, re.Intent)
	if err != nil || orderID == "" {
		return err
	}
	orders, err := r.orders.Standings(ctx, []string{orderID})
	if err != nil {
		return err
	}
	st, ok := orders[orderID]
	if !ok || st.PaymentRef != re.Intent {
		return nil
	}
	rf := refund.Refund{ID: id, Tenant: st.Tenant, WorkflowID: wf, OrderID: orderID}
	wrote, err := rq.RebuildRefund(ctx, rf, re.ID, re.Amount, st.Currency)
	if err != nil || !wrote {
		return err
	}
	if order.AfterPayment(st.Status) { // the rebuilt row explains the refund: the order follows it here
		o := order.Order{ID: orderID, Tenant: st.Tenant, WorkflowID: st.WorkflowID, Amount: st.Amount, Currency: st.Currency}
		if err := r.engine.Follow(ctx, o, re.Intent, re.ID); err != nil {
			return err
		}
	}
	return r.record(ctx, p, Finding{Kind: KindRefundRowLost, Action: ActionRebuilt, OrderID: orderID, Tenant: st.Tenant,
		ProviderID: re.ID, Amount: re.Amount, Currency: st.Currency, Detail: "refund request " + id + " rebuilt from the provider's refund"})
}
