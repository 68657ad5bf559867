package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orderflow/orderflow/tenants"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/provider"
)

// openIntents cancels the intents of ours (their metadata names an order of a
// tenant) created since the last pass that are still open on an order that ended
// without them: declined, cancelled or failed, or paid by another intent. Open, an
// intent takes a card through its client secret. Intents that are not ours, and
// those of orders still paying, are left alone.
func (r *Reconciler) openIntents(ctx context.Context, p *pass) error {
	p.rep.ProviderRequests++ // the first page's
	err := r.provider.ListIntents(ctx, p.since, func(intents []provider.Intent) error {
		p.rep.ProviderRequests++
		return r.closeOpen(ctx, p, intents)
	})
	if err != nil {
		return fmt.Errorf("intents since %s: %w", p.since.Format(time.RFC3339), err)
	}
	return nil
}

// closeOpen cancels those of intents that are ours and open on an order that
// ended without them.
func (r *Reconciler) closeOpen(ctx context.Context, p *pass, intents []provider.Intent) error {
	var open []provider.Intent
	var ids []string
	for _, pi := range intents {
		switch pi.Status {
		case "requires_payment_method", "requires_confirmation", "requires_action":
			if pi.Metadata["order_id"] != "" && tenants.Valid(pi.Metadata["tenant"]) {
				open, ids = append(open, pi), append(ids, pi.Metadata["order_id"])
			}
		}
	}
	if len(open) == 0 {
		return nil
	}
	orders, err := r.orders.Standings(ctx, ids)
	if err != nil {
		return fmt.Errorf("read the orders of %d open intents: %w", len(open), err)
	}
	for _, pi := range open {
		o, ok := orders[pi.Metadata["order_id"]]
		ended := ok && (o.Status == order.StatusPaymentDeclined || o.Status == order.StatusCancelled || o.Status == order.StatusFailed ||
			(order.AfterPayment(o.Status) && o.PaymentRef != pi.ID))
		if !ended || o.Tenant != pi.Metadata["tenant"] {
			continue
		}
		f := Finding{Kind: KindOpenIntent, Action: ActionCancelled, OrderID: pi.Metadata["order_id"],
			Tenant: o.Tenant, ProviderID: pi.ID, Amount: pi.Amount, Detail: "open on an order that is " + string(o.Status)}
		if err := r.cancelIntent(ctx, p, pi, f); err != nil {
			return err
		}
	}
	return nil
}

// cancelIntent cancels an open intent and records f. A cancel that fails is a
// finding, tried again by a later pass (providerFailed).
func (r *Reconciler) cancelIntent(ctx context.Context, p *pass, pi provider.Intent, f Finding) error {
	base := "reconcile:cancel:" + pi.ID
	key, err := r.key(ctx, base)
	if err == nil {
		p.rep.ProviderRequests++
		_, err = r.provider.CancelIntent(ctx, key, pi.ID)
	}
	var perr *provider.Error
	if errors.As(err, &perr) && perr.UnexpectedState() {
		return nil // it moved on meanwhile (a charge is the charges' check's)
	}
	if err != nil {
		// An intent's creation time is not listed: the whole window is read again.
		return r.providerFailed(ctx, p, f, base, p.since, fmt.Errorf("cancel intent %s: %w", pi.ID, err))
	}
	return r.done(ctx, p, f, base, key)
}
