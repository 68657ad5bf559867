package reconcile

import (
	"slices"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
)

// A bank disputes the payment of an order that had ended (cancelled and
// refunded): the order keeps its status and shows the dispute, each of its
// statuses once, with a finding; no follow run moves it. A dispute of a paid
// order is followed, as before.
func TestADisputeOfAnEndedOrderShowsOnTheOrder(t *testing.T) {
	r := newRig(t)
	r.orders.byID["ord_5"] = orderstore.Standing{Tenant: "acme", WorkflowID: "order:acme:5", Status: order.StatusCancelled,
		PaymentRef: "pi_5", Amount: 800, Currency: "usd"}
	r.orders.byID["ord_6"] = orderstore.Standing{Tenant: "acme", WorkflowID: "order:acme:6", Status: order.StatusPaid,
		PaymentRef: "pi_6", Amount: 900, Currency: "usd"}
	r.rec.ledger = fakeLedger{"pi_3": "ord_3", "pi_5": "ord_5", "pi_6": "ord_6"}
	r.pay.disputes = []provider.Dispute{{ID: "dp_5", Intent: "pi_5", Amount: 800, Status: "needs_response"},
		{ID: "dp_6", Intent: "pi_6", Amount: 900, Status: "needs_response"}}
	r.pass(t, "first pass")
	r.pass(t, "second pass")
	if got := r.orders.noted["ord_5"]; got != "needs_response" {
		t.Fatalf("the cancelled order shows dispute %q, want needs_response", got)
	}
	if a := r.action(KindDispute, "dp_5:needs_response"); a != ActionDisputeNoted {
		t.Fatalf("finding of the dispute: %q", a)
	}
	for _, f := range r.engine.followed {
		if f == "ord_5 dp_5:needs_response" {
			t.Fatalf("a follow run started for the cancelled order")
		}
	}
	if !slices.Contains(r.engine.followed, "ord_6 dp_6:needs_response") {
		t.Fatalf("follow runs %v, want one for the paid order's dispute", r.engine.followed)
	}

	r.pay.disputes[0].Status = "lost"
	r.pass(t, "the dispute lost")
	if got := r.orders.noted["ord_5"]; got != "lost" {
		t.Fatalf("the cancelled order shows dispute %q, want lost", got)
	}
}

// A refund others made of an order that ended CANCELLED (its own refund gave
// back the rest) is reported, once, and starts no follow run, as is the
// cancel's own refund that the provider failed; one of a paid order has the
// order follow it.
func TestARefundByOthersOfACancelledOrderIsReported(t *testing.T) {
	r := newRig(t)
	r.orders.byID["ord_5"] = orderstore.Standing{Tenant: "acme", WorkflowID: "order:acme:5", Status: order.StatusCancelled,
		PaymentRef: "pi_5", Amount: 800, Currency: "usd"}
	r.orders.byID["ord_6"] = orderstore.Standing{Tenant: "acme", WorkflowID: "order:acme:6", Status: order.StatusPaid,
		PaymentRef: "pi_6", Amount: 900, Currency: "usd"}
	r.rec.ledger = fakeLedger{"pi_5": "ord_5", "pi_6": "ord_6"}
	r.pay.refunds = append(r.pay.refunds,
		listed[provider.Refund]{provider.Refund{ID: "re_5", Intent: "pi_5", Amount: 100, Status: "succeeded"}, time.Now()},
		listed[provider.Refund]{provider.Refund{ID: "re_6", Intent: "pi_6", Amount: 100, Status: "succeeded"}, time.Now()},
		// The cancel's own refund, failed by the provider (a card that cannot take it).
		listed[provider.Refund]{provider.Refund{ID: "re_7", Intent: "pi_5", Amount: 700, Status: "failed",
			Metadata: map[string]string{"orderflow_refund_key": "k"}}, time.Now()})
	r.pass(t, "first pass")
	r.pass(t, "second pass")
	if a := r.action(KindRefundElsewhere, "re_5"); a != ActionReported {
		t.Fatalf("finding of the cancelled order's refund by others: %q, want %s", a, ActionReported)
	}
	if a := r.action(KindRefundElsewhere, "re_6"); a != ActionOrderFollowed {
		t.Fatalf("finding of the paid order's refund by others: %q, want %s", a, ActionOrderFollowed)
	}
	if a := r.action(KindRefundFailed, "re_7:failed"); a != ActionReported {
		t.Fatalf("finding of the cancelled order's own refund failed: %q, want %s", a, ActionReported)
	}
	if slices.Contains(r.engine.followed, "ord_5 re_5") || !slices.Contains(r.engine.followed, "ord_6 re_6") {
		t.Fatalf("follow runs %v, want one for the paid order only", r.engine.followed)
	}
}
