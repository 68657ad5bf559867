package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
)

// providerSides reads the cursor and runs the provider's three checks from it:
// the charges, the refunds and disputes of others, the open intents. Each runs
// whatever the others did; the error of any (a list that could not be read) is
// the pass's.
func (r *Reconciler) providerSides(ctx context.Context, p *pass) error {
	since, ok, err := r.findings.Cursor(ctx, cursorName)
	switch {
	case err != nil:
		return err
	case ok && since.After(p.start):
		// Restored from a newer database than the provider's view, or the clock
		// went back: read as a first pass would, and say so.
		f := Finding{Kind: KindCursorAhead, Action: ActionReread, ProviderID: cursorName + "@" + since.UTC().Format(time.RFC3339Nano),
			Detail: "the cursor was at " + since.UTC().Format(time.RFC3339) + ", after the pass began: read from the first lookback"}
		if err := r.record(ctx, p, f); err != nil {
			return err
		}
		since = p.start.Add(-r.opts.FirstLookback)
	case ok:
		since = since.Add(-r.opts.Overlap)
	default:
		since = p.start.Add(-r.opts.FirstLookback)
	}
	p.since, p.rep.Since = since, since
	charges := r.providerSide(ctx, p)
	others := r.elsewhere(ctx, p)
	intents := r.openIntents(ctx, p)
	return errors.Join(charges, others, intents)
}

// providerSide checks that every succeeded charge created since the last pass
// belongs to an order that shows it, and refunds (or reports) the others.
func (r *Reconciler) providerSide(ctx context.Context, p *pass) error {
	p.rep.ProviderRequests++ // the first page's, if there is none
	return r.unexplained(ctx, p.since, func(charges int, found []unexplainedCharge) error {
		p.rep.Charges += charges
		p.rep.ProviderRequests++
		return r.repair(ctx, p, found)
	})
}

// repair refunds (or reports) the unexplained charges found, once nobody can
// explain them.
func (r *Reconciler) repair(ctx context.Context, p *pass, found []unexplainedCharge) error {
	for _, u := range found {
		var err error
		if u.finding.Kind == KindChargeWithoutOrder {
			done, err := r.rebuildCharge(ctx, p, u.charge)
			if err != nil {
				return err
			}
			if done {
				continue
			}
		}
		if r.opts.RefundOrphans {
			err = r.refundOrphan(ctx, p, u)
		} else {
			f := u.finding
			f.Action = ActionReported
			err = r.record(ctx, p, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// refundOrphan refunds what is left of an unexplained charge and records it. A
// refund that fails is a finding, tried again by a later pass (providerFailed).
func (r *Reconciler) refundOrphan(ctx context.Context, p *pass, u unexplainedCharge) error {
	c, f := u.charge, u.finding
	base := "reconcile:refund:" + c.ID
	key, err := r.key(ctx, base)
	if err == nil {
		p.rep.ProviderRequests++
		_, err = r.provider.RefundCharge(ctx, key, c.ID, c.Amount-c.Refunded,
			map[string]string{"order_id": c.Metadata["order_id"], "orderflow_reconciled": f.Kind})
	}
	if err != nil {
		return r.providerFailed(ctx, p, f, base, c.Created, fmt.Errorf("refund charge %s (%s): %w", c.ID, f.Kind, err))
	}
	f.Action = ActionRefunded
	return r.done(ctx, p, f, base, key)
}

// unexplainedCharge is a succeeded, unrefunded charge no order shows, and what is
// wrong with it.
type unexplainedCharge struct {
	charge  provider.Charge
	finding Finding
}

// unexplained lists the charges created since since, a page at a time, and
// hands each page's count and its succeeded, unrefunded charges that no order
// shows to found.
func (r *Reconciler) unexplained(ctx context.Context, since time.Time, found func(int, []unexplainedCharge) error) error {
	err := r.provider.ListCharges(ctx, since, func(charges []provider.Charge) error {
		ids := make([]string, 0, len(charges))
		for _, c := range charges {
			ids = append(ids, c.Metadata["order_id"])
		}
		orders, err := r.orders.Standings(ctx, ids)
		if err != nil {
			return fmt.Errorf("read the orders of %d charges: %w", len(charges), err)
		}
		var out []unexplainedCharge
		for _, c := range charges {
			if c.Status != "succeeded" || c.Refunded >= c.Amount {
				continue
			}
			if f, ok := judge(c, orders); ok {
				out = append(out, unexplainedCharge{charge: c, finding: f})
			}
		}
		return found(len(charges), out)
	})
	if err != nil {
		return fmt.Errorf("charges since %s: %w", since.Format(time.RFC3339), err)
	}
	return nil
}

// judge says what is wrong with a succeeded, unrefunded charge, if anything.
func judge(c provider.Charge, orders map[string]orderstore.Standing) (Finding, bool) {
	f := Finding{OrderID: c.Metadata["order_id"], ProviderID: c.ID, Amount: c.Amount - c.Refunded, Currency: c.Currency}
	o, ok := orders[f.OrderID]
	switch {
	case !ok:
		f.OrderID, f.Kind, f.Detail = "", KindChargeWithoutOrder, "no order "+c.Metadata["order_id"]
	case o.Status == order.StatusPaymentDeclined || o.Status == order.StatusCancelled || o.Status == order.StatusFailed:
		f.Tenant, f.Kind, f.Detail = o.Tenant, KindChargeOnUnpaidOrder, "the order is "+string(o.Status)
	case o.Status == order.StatusPaid && o.PaymentRef != "" && o.PaymentRef != c.Intent && o.PaymentRef != c.ID:
		f.Tenant, f.Kind, f.Detail = o.Tenant, KindChargeNotTheOrders, "the order was paid by "+o.PaymentRef
	default:
		return f, false // paid by it, or not settled yet: its workflow's business
	}
	return f, true
}

// record stores a finding and counts it the first time it is found.
func (r *Reconciler) record(ctx context.Context, p *pass, f Finding) error {
	isNew, err := r.findings.Record(ctx, f)
	if err != nil || !isNew {
		return err
	}
	r.counted(p, f)
	return nil
}

// counted counts a new finding in the pass's report and the metric.
func (r *Reconciler) counted(p *pass, f Finding) {
	p.rep.Findings++
	r.found.WithLabelValues(f.Kind, f.Action).Inc()
}
