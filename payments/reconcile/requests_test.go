package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
)

// fakeRequests is the findings store with refund requests in memory.
type fakeRequests struct {
	*fakeFindings
	rows map[string]refundstore.Row
}

func (s *fakeRequests) StaleRefunds(_ context.Context, before time.Time, _ int) ([]refundstore.Row, error) {
	var out []refundstore.Row
	for _, r := range s.rows {
		if r.Status == refund.StatusPending && r.UpdatedAt.Before(before) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *fakeRequests) SettleRefund(_ context.Context, id, providerRefundID string, amount int64) (bool, error) {
	r := s.rows[id]
	r.Status, r.ProviderRefundID, r.Amount = refund.StatusSucceeded, providerRefundID, amount
	s.rows[id] = r
	return true, nil
}

func (s *fakeRequests) ReleaseRefund(_ context.Context, id, failure string) (bool, error) {
	r := s.rows[id]
	r.Status, r.Failure = refund.StatusFailed, failure
	s.rows[id] = r
	return true, nil
}

func (s *fakeRequests) RebuildRefund(_ context.Context, r refund.Refund, providerRefundID string, amount int64, _ string) (bool, error) {
	if _, ok := s.rows[r.ID]; ok {
		return false, nil
	}
	s.rows[r.ID] = refundstore.Row{Refund: r, Status: refund.StatusSucceeded, Amount: amount, ProviderRefundID: providerRefundID}
	return true, nil
}

// listingProvider is the fake provider with each intent's refunds.
type listingProvider struct {
	*fakeProvider
	byIntent map[string][]provider.Refund
}

func (p *listingProvider) IntentRefunds(_ context.Context, intentID string) ([]provider.Refund, error) {
	return p.byIntent[intentID], nil
}

// intentLedger names each order's intent and each intent's order.
type intentLedger map[string]string // order ID -> intent

func (l intentLedger) IntentOfOrder(_ context.Context, orderID string) (string, error) {
	return l[orderID], nil
}
func (l intentLedger) OrderOfIntent(_ context.Context, intentID string) (string, error) {
	for o, i := range l {
		if i == intentID {
			return o, nil
		}
	}
	return "", nil
}

// Refund requests left PENDING: one reserved whose run was terminated with
// nothing at the provider is released; one whose run ended after the provider
// refunded it is settled and its order follows; one whose run still runs is
// left alone; one that reserved nothing and has no run yet is left for its
// start, until its key is forgotten.
func TestStaleRefundRequestsEndAsTheProviderSays(t *testing.T) {
	r := newRig(t)
	old := time.Now().Add(-10 * time.Minute)
	row := func(id string, amount int64, at time.Time) refundstore.Row {
		return refundstore.Row{Refund: refund.Refund{ID: id, Tenant: "acme", WorkflowID: "refund:" + id, OrderID: "ord_9"},
			Status: refund.StatusPending, Amount: amount, UpdatedAt: at}
	}
	reqs := &fakeRequests{fakeFindings: r.findings, rows: map[string]refundstore.Row{
		"rfd_terminated": row("rfd_terminated", 500, old),
		"rfd_made":       row("rfd_made", 300, old),
		"rfd_running":    row("rfd_running", 200, old),
		"rfd_unstarted":  row("rfd_unstarted", 0, old),
		"rfd_forgotten":  row("rfd_forgotten", 0, time.Now().Add(-25*time.Hour)),
	}}
	for _, id := range []string{"rfd_terminated", "rfd_made", "rfd_unstarted", "rfd_forgotten"} {
		r.engine.closed["refund:"+id] = true
	}
	prov := &listingProvider{fakeProvider: r.pay, byIntent: map[string][]provider.Refund{"pi_9": {
		{ID: "re_made", Intent: "pi_9", Amount: 300, Status: "succeeded", Metadata: map[string]string{refundRequestField: "rfd_made"}},
		{ID: "re_other", Intent: "pi_9", Amount: 100, Status: "failed", Metadata: map[string]string{refundRequestField: "rfd_terminated"}},
	}}}
	r.orders.byID["ord_9"] = orderstore.Standing{Tenant: "acme", WorkflowID: "order:acme:9", Status: order.StatusPaid,
		PaymentRef: "pi_9", Amount: 1299, Currency: "usd"}
	r.rec = New(r.engine, prov, r.orders, intentLedger{"ord_9": "pi_9", "ord_3": "pi_3"}, reqs, NewMetrics(prometheus.NewRegistry()),
		Options{Grace: time.Minute, Overlap: 5 * time.Minute, FirstLookback: time.Hour, RefundOrphans: true})
	r.pass(t, "a pass")
	want := map[string]refund.Status{"rfd_terminated": refund.StatusFailed, "rfd_made": refund.StatusSucceeded,
		"rfd_running": refund.StatusPending, "rfd_unstarted": refund.StatusPending, "rfd_forgotten": refund.StatusFailed}
	for id, st := range want {
		if got := reqs.rows[id].Status; got != st {
			t.Errorf("%s is %s, want %s", id, got, st)
		}
	}
	if reqs.rows["rfd_made"].ProviderRefundID != "re_made" {
		t.Errorf("the settled request names %q, want re_made", reqs.rows["rfd_made"].ProviderRefundID)
	}
	if a := r.action(KindRefundWorkflowEnded, "rfd_terminated"); a != ActionReservationReleased {
		t.Errorf("finding of the terminated request: %q", a)
	}
	if a := r.action(KindRefundWorkflowEnded, "rfd_made"); a != ActionRefundSettled {
		t.Errorf("finding of the request the provider refunded: %q", a)
	}
	followed := false
	for _, f := range r.engine.followed {
		followed = followed || f == "ord_9 re_made"
	}
	if !followed {
		t.Errorf("follow runs %v, want the order to follow re_made", r.engine.followed)
	}
}
