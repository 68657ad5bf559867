package reconcile

import (
	"context"
	"time"

	"github.com/orderflow/orderflow/orders/orderstore"
)

// Audit is what a read-only pass found: the discrepancies left, none repaired.
type Audit struct {
	Orders   int // unsettled orders looked at
	Charges  int // charges read from the provider
	Findings []Finding
}

// Audit looks as a pass does, over the charges created since since, and repairs
// nothing: a check that every succeeded charge belongs to an order that shows it
// and no unsettled order is left without its workflow. An order it cannot look
// at fails it: a check must see everything.
func (r *Reconciler) Audit(ctx context.Context, since time.Time) (Audit, error) {
	var a Audit
	unsettled, closed, err := r.workflowless(ctx, time.Now(), func(_ orderstore.Unsettled, err error) error { return err })
	if err != nil {
		return a, err
	}
	a.Orders = unsettled
	for _, o := range closed {
		a.Findings = append(a.Findings, workflowClosed(o))
	}
	err = r.unexplained(ctx, since, func(charges int, found []unexplainedCharge) error {
		a.Charges += charges
		for _, u := range found {
			a.Findings = append(a.Findings, u.finding)
		}
		return nil
	})
	return a, err
}
