package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/internal/refund"
	"github.com/orderflow/orderflow/internal/refundstore"
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
)

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
}

// IntentRefunds lists an intent's refunds (a consistent read).
type IntentRefunds interface {
	IntentRefunds(ctx context.Context, intentID string) ([]provider.Refund, error)
}

// StaleRefunds returns the PENDING refund requests last changed before before.
func (s *Store) StaleRefunds(ctx context.Context, before time.Time, limit int) ([]refundstore.Row, error) {
	return s.refunds.Stale(ctx, before, limit)
}

// SettleRefund ends the request SUCCEEDED with the provider's refund.
func (s *Store) SettleRefund(ctx context.Context, id, providerRefundID string, amount int64) (bool, error) {
	return s.refunds.Settle(ctx, id, providerRefundID, amount)
}

// ReleaseRefund ends a PENDING request FAILED with failure.
func (s *Store) ReleaseRefund(ctx context.Context, id, failure string) (bool, error) {
	return s.refunds.Fail(ctx, id, failure)
}

// requestsSide ends each refund request left PENDING by a workflow that is not
// running: a reservation is not money, so one that no run will send must not
// hold part of its order's charge (later refunds and the cancel wait on it). The
// provider decides how it ends: its refund of the request, if any, is the
// request's (SUCCEEDED, and the order follows); none, and it ends FAILED. A run
// that is still sending settles a released row again when its refund lands (the
// provider's word is final). A failure is a finding; the next pass tries again.
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
	if intent != "" && row.Amount > 0 {
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
