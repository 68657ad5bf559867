package reconcile

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow/orderflow/tenants"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
)

// KindRowRebuilt: an order that PostgreSQL lost (a restore, a failover) or holds
// as not yet paid, which the workflow engine and the provider show paid: its
// row and its payment were written back.
const KindRowRebuilt = "row_rebuilt"

// ActionRebuilt: the order's row and its payment were written back.
const ActionRebuilt = "rebuilt"

// lostWindow is how long before its charge an order's workflow may have
// started: the search for the workflow of a charge whose intent does not name
// it (made before intents did) reads the workflows started in that window, and
// the engine adds how long its orders wait on their customers. clockSkew widens
// the window on both ends: the charge's time is on the provider's clock, a
// workflow's start on the engine's.
const (
	lostWindow = 24 * time.Hour
	clockSkew  = 10 * time.Minute
)

// WorkflowMetadata is the key of an order's intent's metadata that names the
// order's workflow; a workflow ID longer than the provider takes in one value
// goes on in WorkflowMetadata_2, _3... (at most workflowParts).
const WorkflowMetadata = "orderflow_workflow"

// metadataValueMax is the longest metadata value the provider takes (Stripe:
// 500 characters). A workflow ID is visible ASCII (identity.WorkflowID), so
// bytes are characters; the engine takes IDs up to 1000 by default.
const (
	metadataValueMax = 500
	workflowParts    = 4
)

// IntentMetadata is the metadata of an order's PaymentIntent: its order, its
// tenant and its workflow's ID, so that a reconciler that lost the order's row
// asks the engine for that workflow by ID, whatever its age or either clock.
func IntentMetadata(orderID, tenant, workflowID string) map[string]string {
	md := map[string]string{"order_id": orderID, "tenant": tenant}
	if workflowID == "" || len(workflowID) > metadataValueMax*workflowParts {
		return md // the reconciler searches for it, as for intents made before
	}
	for i := 0; len(workflowID) > 0; i++ {
		n := min(len(workflowID), metadataValueMax)
		md[workflowPart(i)] = workflowID[:n]
		workflowID = workflowID[n:]
	}
	return md
}

func workflowPart(i int) string {
	if i == 0 {
		return WorkflowMetadata
	}
	return WorkflowMetadata + "_" + strconv.Itoa(i+1)
}

// workflowOf returns the workflow ID that the metadata names when it is the
// tenant's order's ("" otherwise: an intent made before intents named it, or
// metadata someone edited): an order's ID is a digest of its workflow's.
func workflowOf(md map[string]string, tenant, orderID string) string {
	var b strings.Builder
	for i := range workflowParts {
		part, ok := md[workflowPart(i)]
		if !ok {
			break
		}
		b.WriteString(part)
	}
	id := b.String()
	if !strings.HasPrefix(id, order.Kind+":"+tenant+":") || order.IDFor(id) != orderID {
		return ""
	}
	return id
}

// rebuildCharge writes back the order of a succeeded charge whose order row is
// missing, when the workflow engine remembers that order paid by the charge's
// intent: the database lost its tail, not the order. True when it did, or when
// the engine could not be asked (nothing is refunded on a guess: a later pass
// asks again). Only a charge nobody explains is left to be refunded.
func (r *Reconciler) rebuildCharge(ctx context.Context, p *pass, c provider.Charge) (bool, error) {
	tenant, orderID := c.Metadata["tenant"], c.Metadata["order_id"]
	if !tenants.Valid(tenant) || orderID == "" || c.Intent == "" {
		return false, nil // not an order's intent of ours
	}
	k, ok, err := r.find(ctx, tenant, orderID, c)
	if err != nil {
		p.rereadFrom(c.Created)
		return true, r.failed(ctx, p, Finding{Kind: KindUnchecked, OrderID: orderID, Tenant: tenant, ProviderID: c.ID},
			fmt.Errorf("find the workflow of order %s: %w", orderID, err))
	}
	if !ok {
		return r.forgotten(ctx, p, c)
	}
	if k.IntentID != "" && k.IntentID != c.Intent {
		return false, nil // paid by another intent: this charge is a second one
	}
	switch {
	case order.AfterPayment(k.Status):
	case !k.Status.Terminal():
		// Still paying (the loss came mid-payment): the charge is its payment,
		// and the run's own move to PAID then finds the row PAID.
		k.Status = order.StatusPaid
	default:
		return false, nil // ended without it: what is left is refunded
	}
	k.IntentID, k.ChargeID = c.Intent, c.ID
	return true, r.rebuild(ctx, p, k, c.Created, "the order's row was missing; its workflow shows it "+string(k.Status)+" by "+c.Intent)
}

// find asks the engine for the workflow of the charge's order: by the ID its
// intent names, current and frozen types alike; for an intent made before
// intents named it, by a search around the charge. An error, or a search that
// could not read its whole window, leaves the charge unchecked: nothing is
// refunded while the workflow may exist.
func (r *Reconciler) find(ctx context.Context, tenant, orderID string, c provider.Charge) (Known, bool, error) {
	if id := workflowOf(c.Metadata, tenant, orderID); id != "" {
		return r.engine.Known(ctx, id)
	}
	return r.lost(ctx, tenant, orderID, c.Created)
}

// lost finds the workflow of the tenant's order of a charge created at created:
// among those started in the hour before it first (where it nearly always is,
// in one page), then in the lostWindow before it; each end clockSkew wider.
func (r *Reconciler) lost(ctx context.Context, tenant, orderID string, created time.Time) (Known, bool, error) {
	near := created.Add(-time.Hour)
	k, ok, err := r.engine.Lost(ctx, tenant, orderID, near, created.Add(clockSkew))
	if err != nil || ok {
		return k, ok, err
	}
	return r.engine.Lost(ctx, tenant, orderID, created.Add(-lostWindow-clockSkew), near)
}

// forgotten reports, rather than refunds, a charge of an order's intent of ours
// that no workflow shows when it is older than the engine's retention: its
// workflow may have paid an order and been deleted since (a restore of a backup
// older than the retention), and nobody can tell. True when it did.
func (r *Reconciler) forgotten(ctx context.Context, p *pass, c provider.Charge) (bool, error) {
	keep, err := r.engine.Retention(ctx)
	if err != nil {
		p.rereadFrom(c.Created)
		return true, r.failed(ctx, p, Finding{Kind: KindUnchecked, ProviderID: c.ID, Tenant: c.Metadata["tenant"]},
			fmt.Errorf("read the workflow engine's retention: %w", err))
	}
	if !c.Created.Before(time.Now().Add(-keep)) {
		return false, nil
	}
	return true, r.record(ctx, p, Finding{Kind: KindChargeWithoutOrder, Action: ActionReported, Tenant: c.Metadata["tenant"],
		ProviderID: c.ID, Amount: c.Amount - c.Refunded, Currency: c.Currency,
		Detail: "no order " + c.Metadata["order_id"] + ", and older than the workflow engine's retention (" + keep.String() +
			"): its workflow may have paid it and been deleted"})
}

// rebuildUnsettled writes back the payment of an unsettled order whose workflow
// closed showing it paid: the row was recorded again, before its payment, by a
// request retried after the table lost it. True when it did.
func (r *Reconciler) rebuildUnsettled(ctx context.Context, p *pass, o orderstore.Unsettled) (bool, error) {
	k, ok, err := r.engine.Known(ctx, o.WorkflowID)
	switch {
	case err != nil || !ok:
		return false, err
	case order.AfterPayment(k.Status) && k.IntentID != "" && k.ChargeID != "":
	case k.Status.Terminal():
		// Ended as its workflow says (declined; cancelled or failed, and refunded
		// if it charged): a recovery run would read the intent, find it
		// succeeded, and take a refunded order for a paid one.
	default:
		return false, nil
	}
	return true, r.rebuild(ctx, p, k, time.Time{}, "the order was "+string(o.Status)+"; its workflow shows it "+string(k.Status))
}

// rebuild writes k back with its finding. A rebuilt order paid and then
// refunded or disputed is PAID in its row: a follow run moves it to what the
// provider holds; when it cannot be started, the pass reads the charge's
// refunds again from created. A failure is a finding; a later pass finds the
// order again.
func (r *Reconciler) rebuild(ctx context.Context, p *pass, k Known, created time.Time, detail string) error {
	o := k.Order
	f := Finding{Kind: KindRowRebuilt, Action: ActionRebuilt, OrderID: o.ID, Tenant: o.Tenant, ProviderID: k.ChargeID,
		Amount: o.Amount, Currency: o.Currency, Detail: detail}
	changed, err := r.findings.Rebuild(ctx, k, f)
	if err == nil && changed {
		r.counted(p, f)
	}
	if err == nil && order.AfterPayment(k.Status) && k.Status != order.StatusPaid {
		if err = r.engine.Follow(ctx, o, k.IntentID, "rebuilt:"+k.ChargeID); err != nil {
			f = Finding{Kind: KindUnchecked, OrderID: o.ID, Tenant: o.Tenant, ProviderID: k.ChargeID}
		}
	}
	if err != nil {
		if !created.IsZero() {
			p.rereadFrom(created)
		}
		return r.failed(ctx, p, f, fmt.Errorf("rebuild order %s: %w", o.ID, err))
	}
	return nil
}
