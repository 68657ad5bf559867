package operator

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform/personal"
)

// customerIDs open an order's customer ID for an operator (custkeys.Store):
// personal.Erased once the customer is erased, a plain ID (an order placed
// before IDs were sealed) as it is.
type customerIDs interface {
	Shown(ctx context.Context, tenant, value string) (string, error)
}

// sealedIDs are customerIDs without the payload keys: a sealed ID shows as
// "[sealed]", never as its sealed value.
type sealedIDs struct{}

// sealed is a customer ID shown without the keys that open it.
const sealed = "[sealed]"

func (sealedIDs) Shown(_ context.Context, _, value string) (string, error) {
	if personal.IsSealed(value) {
		return sealed, nil
	}
	return value, nil
}

// viewOf reads what each owning store holds of the order l.
func viewOf(ctx context.Context, pool *pgxpool.Pool, customers customerIDs, l orderstore.Located, ui temporalUI) (orderView, error) {
	customer, err := customers.Shown(ctx, l.Tenant, l.CustomerID)
	if err != nil {
		return orderView{}, fmt.Errorf("open the customer of %s: %w", l.ID, err)
	}
	v := orderView{Tenant: l.Tenant, ID: l.ID, Status: string(l.Status), CustomerID: customer, Currency: l.Currency,
		Amount: l.Amount, AmountRefunded: l.AmountRefunded, Items: l.Items, PaymentRef: l.PaymentRef, Failure: l.Failure,
		Dispute: l.Dispute, CreatedAt: l.CreatedAt.UTC(), UpdatedAt: l.UpdatedAt.UTC(), WorkflowID: l.WorkflowID,
		WorkflowURL: ui.link(l.WorkflowID), Payments: []paymentView{}, Refunds: []refundView{}}
	lines, err := ledger.New(pool).OfOrder(ctx, l.ID)
	if err != nil {
		return v, err
	}
	for _, p := range lines {
		v.Payments = append(v.Payments, paymentView{Kind: string(p.Kind), Status: string(p.Status), Amount: p.Amount,
			Currency: p.Currency, ProviderID: p.ProviderID, CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()})
	}
	refunds, _, err := refundstore.New(pool).ListByOrder(ctx, l.Tenant, l.ID, maxShown, "")
	if err != nil {
		return v, fmt.Errorf("read the refunds of %s: %w", l.ID, err)
	}
	for _, r := range refunds {
		v.Refunds = append(v.Refunds, refundView{ID: r.ID, Status: string(r.Status), AmountRequested: r.AmountRequested,
			Amount: r.Amount, Currency: r.Currency, Reason: string(r.Reason), Failure: r.Failure,
			ProviderRefundID: r.ProviderRefundID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()})
	}
	found, err := reconcile.NewStore(pool).List(ctx, reconcile.Filter{OrderID: l.ID, Limit: maxShown})
	if err != nil {
		return v, err
	}
	v.Findings = findingsJSON(found)
	return v, nil
}

// ordersTable prints each order as a block: its fields, then its payments,
// refunds and findings one a line.
func ordersTable(w io.Writer, views []orderView) error {
	for i, v := range views {
		if i > 0 {
			fmt.Fprintln(w)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "order\t%s\ntenant\t%s\nstatus\t%s\namount\t%d %s (refunded %d)\ncustomer\t%s\npayment\t%s\n",
			v.ID, v.Tenant, v.Status, v.Amount, v.Currency, v.AmountRefunded, v.CustomerID, dash(v.PaymentRef))
		fmt.Fprintf(tw, "failure\t%s\ndispute\t%s\ncreated\t%s\nupdated\t%s\nworkflow\t%s\n",
			dash(v.Failure), dash(v.Dispute), stamp(v.CreatedAt), stamp(v.UpdatedAt), v.WorkflowID)
		if v.WorkflowURL != "" {
			fmt.Fprintf(tw, "in the UI\t%s\n", v.WorkflowURL)
		}
		fmt.Fprintf(tw, "\npayments\t%d\n", len(v.Payments))
		for _, p := range v.Payments {
			fmt.Fprintf(tw, "  %s\t%s\t%d %s\t%s\t%s\n", p.Kind, p.Status, p.Amount, p.Currency, dash(p.ProviderID), stamp(p.CreatedAt))
		}
		fmt.Fprintf(tw, "refunds\t%d\n", len(v.Refunds))
		for _, r := range v.Refunds {
			fmt.Fprintf(tw, "  %s\t%s\t%d %s\t%s\t%s\n", r.ID, r.Status, r.Amount, r.Currency, dash(r.ProviderRefundID), stamp(r.CreatedAt))
		}
		fmt.Fprintf(tw, "findings\t%d\n", len(v.Findings))
		for _, f := range v.Findings {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", f.ID, f.Kind, f.Action, stamp(f.FoundAt), f.Detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
