package stacktest

import (
	"context"
	"time"

	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/refundstore"
)

// TenantRequests is the reconciler's store with the refund requests limited to
// one tenant's: the stack's Postgres is shared by every test, and a test's
// reconciler must end only its own requests (against its own sandbox).
type TenantRequests struct {
	*reconcile.Store
	Tenant string
}

// StaleRefunds returns the tenant's stale refund requests among the store's.
func (t TenantRequests) StaleRefunds(ctx context.Context, before time.Time, limit int) ([]refundstore.Row, error) {
	all, err := t.Store.StaleRefunds(ctx, before, limit)
	var mine []refundstore.Row
	for _, r := range all {
		if r.Tenant == t.Tenant {
			mine = append(mine, r)
		}
	}
	return mine, err
}
