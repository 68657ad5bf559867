package reconcile

import (
	"testing"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
)

// Every succeeded, unrefunded charge belongs to an order that shows it; judge
// names the ones that do not.
func TestJudgeNamesChargesNoOrderShows(t *testing.T) {
	orders := map[string]orderstore.Standing{
		"ord_paid":     {Status: order.StatusPaid, PaymentRef: "pi_1"},
		"ord_declined": {Status: order.StatusPaymentDeclined, PaymentRef: "pi_2"},
		"ord_pending":  {Status: order.StatusPaymentPending, PaymentRef: "pi_3"},
		"ord_refunded": {Status: order.StatusPartiallyRefunded, PaymentRef: "pi_4"},
	}
	charge := func(orderID, intent string) provider.Charge {
		return provider.Charge{ID: "ch_" + intent, Amount: 500, Status: "succeeded", Intent: intent, Metadata: map[string]string{"order_id": orderID}}
	}
	for _, c := range []struct {
		charge provider.Charge
		kind   string // "" for none
	}{
		{charge("ord_paid", "pi_1"), ""},
		{charge("ord_paid", "pi_9"), KindChargeNotTheOrders},
		{charge("ord_declined", "pi_2"), KindChargeOnUnpaidOrder},
		{charge("ord_pending", "pi_3"), ""}, // its workflow's business
		{charge("ord_refunded", "pi_4"), ""},
		{charge("ord_missing", "pi_5"), KindChargeWithoutOrder},
		{provider.Charge{ID: "ch_x", Amount: 700, Status: "succeeded"}, KindChargeWithoutOrder},
	} {
		f, ok := judge(c.charge, orders)
		if got := map[bool]string{true: f.Kind}[ok]; got != c.kind {
			t.Errorf("%s of %s: judged %q, want %q", c.charge.ID, c.charge.Metadata["order_id"], got, c.kind)
		}
	}
}
