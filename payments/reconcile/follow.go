package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/provider"
)

// elsewhere has each paid order follow the refunds and disputes that others made
// of its payment since the last pass (their webhooks may have been lost). A
// refund a refund request made is others' only when the request does not
// explain it.
func (r *Reconciler) elsewhere(ctx context.Context, p *pass) error {
	// Either list failing fails the pass, but what the other lists is followed.
	p.rep.ProviderRequests += 2 // the first pages'
	refundsErr := r.provider.ListRefundsSince(ctx, p.since, func(refunds []provider.Refund) error {
		p.rep.Refunds += len(refunds)
		p.rep.ProviderRequests++
		for _, re := range refunds {
			if err := r.followRefund(ctx, p, re); err != nil {
				return err
			}
		}
		return nil
	})
	if refundsErr != nil {
		refundsErr = fmt.Errorf("refunds since %s: %w", p.since.Format(time.RFC3339), refundsErr)
	}
	// Disputes change long after they are opened (a bank takes weeks): every one
	// of the last disputeWindow is read, and each of its statuses is a trigger.
	disputes, err := r.provider.ListDisputes(ctx, time.Now().Add(-disputeWindow))
	if err != nil {
		return errors.Join(refundsErr, fmt.Errorf("list disputes: %w", err))
	}
	p.rep.Refunds += len(disputes)
	p.rep.ProviderRequests += len(disputes) / 100
	for _, d := range disputes {
		if d.Intent == "" {
			continue
		}
		if err := r.follow(ctx, p, trigger{d.ID + ":" + d.Status, d.Intent, KindDispute, "", false, d.Status}); err != nil {
			return errors.Join(refundsErr, err)
		}
	}
	return refundsErr
}

// followRefund has the paid order of a refund listed since the cursor follow it:
// one others made (or a request that does not explain it), or one the provider
// failed after it succeeded or while pending, which gives its share back.
func (r *Reconciler) followRefund(ctx context.Context, p *pass, re provider.Refund) error {
	if re.Intent == "" || re.Metadata["orderflow_reconciled"] != "" {
		return nil
	}
	switch re.Status {
	case "succeeded", "pending":
		if re.Metadata["orderflow_refund_key"] != "" {
			return nil
		}
		if err := r.rebuildRequest(ctx, p, re); err != nil {
			return r.failed(ctx, p, Finding{Kind: KindRefundRowLost, ProviderID: re.ID}, err)
		}
		return r.follow(ctx, p, trigger{re.ID, re.Intent, KindRefundElsewhere, re.Metadata[refundRequestField], true, ""})
	case "failed", "canceled":
		return r.follow(ctx, p, trigger{re.ID + ":" + re.Status, re.Intent, KindRefundFailed, "", true, ""})
	}
	return nil
}

// refundRequestField is the refund metadata that names the refund request that
// made a refund (activities' refundRequestField).
const refundRequestField = "orderflow_refund_request"

// trigger is a refund or dispute at the provider that a paid order may have to
// follow; request is the refund request a refund names, if any; listed, that it
// was listed since the cursor (a dispute is read again by every pass).
type trigger struct {
	id, intent, kind, request string
	listed                    bool
	dispute                   string // a dispute's status
}

// follow has the paid order of tr's intent follow it and records the finding,
// unless the refund request that made it explains it (its row shows it, or it is
// on its way). A failure is a finding; the next pass lists tr again.
func (r *Reconciler) follow(ctx context.Context, p *pass, tr trigger) error {
	o, detail, ended, err := r.followed(ctx, tr)
	if err != nil {
		if tr.listed {
			p.rereadFrom(p.since)
		}
		return r.failed(ctx, p, Finding{Kind: KindUnchecked, OrderID: o.ID, Tenant: o.Tenant, ProviderID: tr.id}, err)
	}
	if detail == "" {
		return nil
	}
	f := Finding{Kind: tr.kind, Action: ActionOrderFollowed, OrderID: o.ID, Tenant: o.Tenant,
		ProviderID: tr.id, Amount: o.Amount, Currency: o.Currency, Detail: detail}
	if ended && tr.kind == KindDispute {
		return r.noteDispute(ctx, p, tr, f)
	}
	if ended {
		f.Action = ActionReported
		return r.record(ctx, p, f)
	}
	if err := r.engine.Follow(ctx, o, tr.intent, tr.id); err != nil {
		if tr.listed {
			p.rereadFrom(p.since)
		}
		return r.failed(ctx, p, f, fmt.Errorf("follow %s of order %s: %w", tr.id, o.ID, err))
	}
	return r.record(ctx, p, f)
}

// followed returns the paid order that must follow tr and why; no why when none
// must (the intent pays no order of ours, the order ended otherwise, or the
// refund request that made the refund explains it). ended: tr is a dispute of an
// order that had ended (CANCELLED, FAILED, REFUNDED), which keeps its status
// and shows the dispute, or a refund others made of an order that ended
// CANCELLED or FAILED (its own refund gave back the rest), only reported.
func (r *Reconciler) followed(ctx context.Context, tr trigger) (o order.Order, why string, ended bool, err error) {
	orderID, err := r.ledger.OrderOfIntent(ctx, tr.intent)
	if err != nil || orderID == "" {
		return order.Order{}, "", false, err
	}
	orders, err := r.orders.Standings(ctx, []string{orderID})
	if err != nil {
		return order.Order{ID: orderID}, "", false, fmt.Errorf("read order %s: %w", orderID, err)
	}
	st, ok := orders[orderID]
	if !ok || st.PaymentRef != tr.intent {
		return order.Order{}, "", false, nil // not paid by it: the charges' check covers it
	}
	o = order.Order{ID: orderID, Tenant: st.Tenant, WorkflowID: st.WorkflowID, Amount: st.Amount, Currency: st.Currency}
	switch {
	case tr.kind == KindDispute && endsDisputed(st.Status):
		return o, "a dispute (" + tr.dispute + ") of an order that is " + string(st.Status), true, nil
	case !order.AfterPayment(st.Status) && tr.kind == KindRefundElsewhere && tr.request == "" &&
		(st.Status == order.StatusCancelled || st.Status == order.StatusFailed):
		// Its own refund gave back the rest; reported, so someone sees who else did.
		return o, "made at the provider by others, of an order that is " + string(st.Status), true, nil
	case !order.AfterPayment(st.Status) && tr.kind == KindRefundFailed &&
		(st.Status == order.StatusCancelled || st.Status == order.StatusFailed):
		// A refund to a card that cannot take it fails again: the customer is
		// refunded by other means, so a person must see it.
		return o, "the provider failed a refund of an order that is " + string(st.Status) +
			": what it gave back is charged again; refund the customer by other means", true, nil
	case !order.AfterPayment(st.Status):
		return order.Order{}, "", false, nil // ended otherwise: the charges' check covers it
	case tr.request == "":
		return o, "made at the provider by others", false, nil
	}
	explained, err := r.findings.RequestExplains(ctx, st.Tenant, tr.request, tr.id)
	if err != nil || explained {
		return o, "", false, err
	}
	return o, "made for refund request " + tr.request + ", which does not show it", false, nil
}

// endsDisputed reports the statuses of an order that a dispute does not move:
// it shows the dispute instead (Orders.NoteDispute).
func endsDisputed(s order.Status) bool {
	return s == order.StatusCancelled || s == order.StatusFailed || s == order.StatusRefunded
}

// noteDispute has an ended order show a dispute of its payment, and records f
// (counted by the findings metric). A failure is a finding; the next pass reads
// the dispute again.
func (r *Reconciler) noteDispute(ctx context.Context, p *pass, tr trigger, f Finding) error {
	f.Action = ActionDisputeNoted
	if _, err := r.orders.NoteDispute(ctx, f.OrderID, tr.dispute); err != nil {
		return r.failed(ctx, p, f, fmt.Errorf("note %s on order %s: %w", tr.id, f.OrderID, err))
	}
	return r.record(ctx, p, f)
}
