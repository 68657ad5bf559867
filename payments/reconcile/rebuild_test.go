package reconcile

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
)

// lostOrder adds to the rig a charge of pi_4 (ch_4) for ord_4 of acme, an order
// the table does not hold, and returns the order as its workflow remembers it.
func (r *rig) lostOrder() order.Order {
	o := order.Order{ID: "ord_4", Tenant: "acme", WorkflowID: "order:acme:http:k4", CustomerID: "cus_1", Amount: 1299, Currency: "usd",
		Items: []order.Item{{SKU: "sku-1", Quantity: 1, UnitAmount: 1299}}}
	r.pay.charges = append(r.pay.charges, provider.Charge{ID: "ch_4", Amount: 1299, Currency: "usd", Status: "succeeded",
		Intent: "pi_4", Metadata: map[string]string{"order_id": "ord_4", "tenant": "acme"}, Created: time.Now().Add(-time.Minute)})
	return o
}

func (r *rig) refundsOf(chargeID string) int { return r.pay.refundsOf(chargeID) }

// PostgreSQL restored to a snapshot taken before an order was paid: the charge
// names an order the table lost, which its workflow shows paid by the charge's
// intent. The order and its payment are written back; nothing is refunded.
func TestALostOrderIsRebuiltNotRefunded(t *testing.T) {
	r := newRig(t)
	o := r.lostOrder()
	r.engine.known["ord_4"] = Known{Order: o, Status: order.StatusPaid, IntentID: "pi_4"}
	r.pass(t, "first pass")
	r.pass(t, "second pass")
	if n := r.refundsOf("ch_4"); n != 0 {
		t.Fatalf("the lost order's charge refunded %d times", n)
	}
	k, ok := r.findings.rebuilt["ord_4"]
	if !ok || k.ChargeID != "ch_4" || k.IntentID != "pi_4" || k.Order.WorkflowID != o.WorkflowID {
		t.Fatalf("rebuilt %+v (%t), want ord_4 paid by pi_4 with ch_4", k, ok)
	}
	if a := r.action(KindRowRebuilt, "ch_4"); a != ActionRebuilt {
		t.Fatalf("row_rebuilt finding: %q", a)
	}
	if a := r.action(KindChargeWithoutOrder, "ch_4"); a != "" {
		t.Fatalf("the lost order's charge found without an order: %q", a)
	}
	if r.refundsOf("ch_1") != 1 || r.refundsOf("ch_2") != 1 {
		t.Fatalf("the charges nobody explains refunded %d and %d times, want 1", r.refundsOf("ch_1"), r.refundsOf("ch_2"))
	}
}

// A workflow of the order that shows it paid by another intent, or not paid,
// does not explain the charge: it is refunded.
func TestAChargeItsOrdersWorkflowDoesNotShowIsRefunded(t *testing.T) {
	for name, k := range map[string]Known{
		"paid by another intent": {Status: order.StatusPaid, IntentID: "pi_other"},
		"cancelled":              {Status: order.StatusCancelled, IntentID: "pi_4"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			k.Order = r.lostOrder()
			r.engine.known["ord_4"] = k
			r.pass(t, "pass")
			if n := r.refundsOf("ch_4"); n != 1 {
				t.Fatalf("charge refunded %d times, want 1", n)
			}
			if len(r.findings.rebuilt) != 0 {
				t.Fatalf("rebuilt %v", r.findings.rebuilt)
			}
		})
	}
}

// A workflow engine that cannot be asked refunds nothing: the charge is a
// finding, the cursor stays, and the next pass, with the engine back, rebuilds.
func TestAnEngineThatCannotBeAskedRefundsNothing(t *testing.T) {
	r := newRig(t)
	o := r.lostOrder()
	r.engine.known["ord_4"] = Known{Order: o, Status: order.StatusPaid, IntentID: "pi_4"}
	r.engine.lostErr = errors.New("temporal: unavailable")
	rep := r.pass(t, "pass with the engine down")
	if n := r.refundsOf("ch_4"); n != 0 {
		t.Fatalf("charge refunded %d times while the engine could not be asked", n)
	}
	if a := r.action(KindUnchecked, "ch_4"); a != ActionFailed || rep.Failed != 1 {
		t.Fatalf("unchecked finding %q, %d failed", a, rep.Failed)
	}
	if at := r.findings.cursors[cursorName]; !at.Before(time.Now().Add(-time.Minute + r.rec.opts.Overlap)) {
		t.Fatalf("cursor moved to %v past the charge", at)
	}
	r.engine.lostErr = nil
	r.pass(t, "pass with the engine back")
	if _, ok := r.findings.rebuilt["ord_4"]; !ok || r.refundsOf("ch_4") != 0 {
		t.Fatalf("after the engine came back: rebuilt %t, refunded %d", ok, r.refundsOf("ch_4"))
	}
}

// A key retried after the restore recorded the order again before the
// reconciler rebuilt it: the row is PENDING, its workflow closed long ago
// showing it paid. The row is rebuilt; no recovery run starts (one would find no
// intent in the ledger, which lost it too, and end the order CANCELLED).
func TestAnOrderRecordedAgainAfterALossIsRebuiltNotRecovered(t *testing.T) {
	r := newRig(t)
	o := r.lostOrder()
	r.orders.open = []orderstore.Unsettled{{Row: orderstore.Row{ID: o.ID, Status: order.StatusPending, WorkflowID: o.WorkflowID,
		Amount: o.Amount, Currency: o.Currency}, Tenant: o.Tenant}}
	r.orders.byID[o.ID] = orderstore.Standing{Tenant: o.Tenant, WorkflowID: o.WorkflowID, Status: order.StatusPending,
		Amount: o.Amount, Currency: o.Currency}
	r.engine.closed[o.WorkflowID] = true
	r.engine.known[o.WorkflowID] = Known{Order: o, Status: order.StatusPaid, IntentID: "pi_4", ChargeID: "ch_4"}
	r.pass(t, "pass")
	if len(r.engine.recovered) != 0 {
		t.Fatalf("recovery runs started for %v", r.engine.recovered)
	}
	if k, ok := r.findings.rebuilt[o.ID]; !ok || k.IntentID != "pi_4" {
		t.Fatalf("rebuilt %+v (%t)", k, ok)
	}
	if n := r.refundsOf("ch_4"); n != 0 {
		t.Fatalf("charge refunded %d times", n)
	}
	// A workflow that ended the order (cancelled in its window, refunded) has
	// the row end so too; none is recovered, which would read the intent
	// succeeded and take the order for paid.
	r.engine.known[o.WorkflowID] = Known{Order: o, Status: order.StatusCancelled, IntentID: "pi_4"}
	delete(r.findings.rebuilt, o.ID)
	r.pass(t, "second pass")
	if k := r.findings.rebuilt[o.ID]; k.Status != order.StatusCancelled || len(r.engine.recovered) != 0 {
		t.Fatalf("rebuilt %+v, recovery runs %v: want the row CANCELLED and none", k, r.engine.recovered)
	}
	// A workflow that closed with no result (terminated) is recovered, as before.
	delete(r.engine.known, o.WorkflowID)
	r.pass(t, "third pass")
	if len(r.engine.recovered) != 1 {
		t.Fatalf("recovery runs: %v, want one for %s", r.engine.recovered, o.ID)
	}
}

// A backup older than Temporal's retention restored: a charge of an order's
// intent of ours that no workflow shows, older than the retention, may have paid
// an order whose workflow was deleted since. It is reported, not refunded; a
// younger one nobody shows is refunded.
func TestAChargeOlderThanTheEnginesMemoryIsReportedNotRefunded(t *testing.T) {
	r := newRig(t)
	r.lostOrder() // ch_4, a minute old; no workflow shows it
	r.engine.retention = 30 * time.Second
	r.pass(t, "pass")
	if n := r.refundsOf("ch_4"); n != 0 {
		t.Fatalf("a charge older than the retention refunded %d times", n)
	}
	if a := r.action(KindChargeWithoutOrder, "ch_4"); a != ActionReported {
		t.Fatalf("its finding: %q, want reported", a)
	}

	r = newRig(t)
	r.lostOrder()
	r.pass(t, "pass within the retention")
	if n := r.refundsOf("ch_4"); n != 1 {
		t.Fatalf("a charge nobody shows, within the retention, refunded %d times, want 1", n)
	}
}

// An unsettled order whose workflow was terminated and whose intent the ledger
// lost (a restore): the recovery run is given the intent the provider lists for
// the order, never none (which would end a charged order CANCELLED).
func TestARecoveryAsksTheProviderForAnIntentTheLedgerLost(t *testing.T) {
	r := newRig(t)
	created := time.Now().Add(-10 * time.Minute)
	r.orders.open = []orderstore.Unsettled{{Row: orderstore.Row{ID: "ord_7", Status: order.StatusPaymentPending,
		WorkflowID: "order:acme:http:k7", Amount: 700, Currency: "usd", CreatedAt: created}, Tenant: "acme"}}
	r.engine.closed["order:acme:http:k7"] = true // terminated: no result
	r.pay.intents = []listed[provider.Intent]{
		{provider.Intent{ID: "pi_other", Status: "succeeded", Metadata: map[string]string{"order_id": "ord_7", "tenant": "other"}}, created},
		{provider.Intent{ID: "pi_7", Status: "succeeded", Metadata: map[string]string{"order_id": "ord_7", "tenant": "acme"}}, created},
	}
	r.pass(t, "pass")
	if len(r.engine.recovered) != 1 || r.engine.recoveredWith != "pi_7" {
		t.Fatalf("recovery runs %v with intent %q, want ord_7 with pi_7", r.engine.recovered, r.engine.recoveredWith)
	}
}

// A cursor later than the pass (a database restored from a newer dump than the
// provider's view): the pass reads from the first lookback, never skips what
// the provider holds, and says so.
func TestACursorAheadOfThePassIsNoticed(t *testing.T) {
	r := newRig(t)
	r.findings.cursors[cursorName] = time.Now().Add(time.Hour)
	rep := r.pass(t, "pass")
	if rep.Charges != 3 || r.refundsOf("ch_1") != 1 {
		t.Fatalf("read %d charges, refunded ch_1 %d times: the pass skipped what the provider holds", rep.Charges, r.refundsOf("ch_1"))
	}
	found := false
	for k, f := range r.findings.rows {
		found = found || (k[0] == KindCursorAhead && f.Action == ActionReread)
	}
	if !found {
		t.Fatal("no cursor_ahead finding")
	}
}

// The loss came while the order's run was paying: the run still runs, its
// status not yet PAID, and the charge of its intent succeeded. The order is
// written back PAID (the run's own move then finds it so); nothing is refunded.
// A run that shows another intent does not explain the charge.
func TestAnOrderLostMidPaymentIsRebuiltPaid(t *testing.T) {
	r := newRig(t)
	o := r.lostOrder()
	r.engine.known["ord_4"] = Known{Order: o, Status: order.StatusPaymentPending}
	r.pass(t, "pass")
	if k, ok := r.findings.rebuilt["ord_4"]; !ok || k.Status != order.StatusPaid || k.IntentID != "pi_4" || r.refundsOf("ch_4") != 0 {
		t.Fatalf("rebuilt %+v (%t), refunded %d: want PAID by pi_4, nothing refunded", k, ok, r.refundsOf("ch_4"))
	}

	r = newRig(t)
	o = r.lostOrder()
	r.engine.known["ord_4"] = Known{Order: o, Status: order.StatusPaymentPending, IntentID: "pi_other"}
	r.pass(t, "pass")
	if len(r.findings.rebuilt) != 0 || r.refundsOf("ch_4") != 1 {
		t.Fatalf("rebuilt %v, refunded %d: a charge of another intent is refunded", r.findings.rebuilt, r.refundsOf("ch_4"))
	}
}

// namedLostOrder adds to the rig a charge (ch_5, of pi_5) of an order the table
// does not hold, whose intent names its workflow; the charge was created a
// minute ago on the provider's clock. It returns the order as its workflow
// remembers it.
func (r *rig) namedLostOrder(key string) order.Order {
	id := order.WorkflowID("acme", order.FromHTTP, key)
	o := order.Order{ID: order.IDFor(id), Tenant: "acme", WorkflowID: id, CustomerID: "cus_1", Amount: 1299, Currency: "usd",
		Items: []order.Item{{SKU: "sku-1", Quantity: 1, UnitAmount: 1299}}}
	r.pay.charges = append(r.pay.charges, provider.Charge{ID: "ch_5", Amount: 1299, Currency: "usd", Status: "succeeded",
		Intent: "pi_5", Metadata: IntentMetadata(o.ID, o.Tenant, id), Created: time.Now().Add(-time.Minute)})
	return o
}

// A PostgreSQL restore lost a paid order whose intent names its workflow: the
// workflow is asked for by that ID, whenever it started on either clock (a
// customer who authenticated a day later, a provider's clock behind the
// engine's), and the order is written back; nothing is refunded.
func TestALostOrderIsFoundByTheWorkflowItsIntentNames(t *testing.T) {
	charged := time.Now().Add(-time.Minute)
	for name, c := range map[string]struct {
		key     string
		started time.Time // on the engine's clock
	}{
		"started 25 hours before its charge":                  {"k5", charged.Add(-25 * time.Hour)},
		"the provider's clock 2 minutes behind":               {"k5", charged.Add(2 * time.Minute)},
		"a workflow ID longer than a metadata value can hold": {strings.Repeat(":", 200), charged.Add(-25 * time.Hour)},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			o := r.namedLostOrder(c.key)
			k := Known{Order: o, Status: order.StatusPaid, IntentID: "pi_5"}
			r.engine.known[o.WorkflowID], r.engine.known[o.ID], r.engine.started[o.ID] = k, k, c.started
			r.pass(t, "pass")
			if got, ok := r.findings.rebuilt[o.ID]; !ok || got.ChargeID != "ch_5" || got.Status != order.StatusPaid || r.refundsOf("ch_5") != 0 {
				t.Fatalf("rebuilt %+v (%t), refunded %d times: want PAID with ch_5, nothing refunded", got, ok, r.refundsOf("ch_5"))
			}
		})
	}
}

// An intent made before intents named their workflows is found by a search
// around its charge that tolerates the clocks' skew: the workflow started 2
// minutes after the charge by the provider's clock.
func TestALostOrderIsFoundWithTheProvidersClockBehind(t *testing.T) {
	r := newRig(t)
	o := r.lostOrder() // ch_4, no workflow in its metadata
	k := Known{Order: o, Status: order.StatusPaid, IntentID: "pi_4"}
	r.engine.known["ord_4"], r.engine.started["ord_4"] = k, r.pay.charges[len(r.pay.charges)-1].Created.Add(2*time.Minute)
	r.pass(t, "pass")
	if _, ok := r.findings.rebuilt["ord_4"]; !ok || r.refundsOf("ch_4") != 0 {
		t.Fatalf("rebuilt %t, refunded %d times: want rebuilt, nothing refunded", ok, r.refundsOf("ch_4"))
	}
}

// The engine cannot be asked for the workflow the intent names: the charge is
// unchecked, never refunded, and the next pass rebuilds the order.
func TestANamedWorkflowTheEngineCannotAnswerForRefundsNothing(t *testing.T) {
	r := newRig(t)
	o := r.namedLostOrder("k5")
	r.engine.knownErr = errors.New("temporal: unavailable")
	rep := r.pass(t, "pass with the engine down")
	if n := r.refundsOf("ch_5"); n != 0 {
		t.Fatalf("charge refunded %d times while the engine could not be asked", n)
	}
	if a := r.action(KindUnchecked, "ch_5"); a != ActionFailed || rep.Failed != 1 {
		t.Fatalf("unchecked finding %q, %d failed", a, rep.Failed)
	}
	r.engine.knownErr = nil
	r.engine.known[o.WorkflowID] = Known{Order: o, Status: order.StatusPaid, IntentID: "pi_5"}
	r.pass(t, "pass with the engine back")
	if _, ok := r.findings.rebuilt[o.ID]; !ok || r.refundsOf("ch_5") != 0 {
		t.Fatalf("after the engine came back: rebuilt %t, refunded %d", ok, r.refundsOf("ch_5"))
	}
}

// The metadata of an order's intent names its workflow within the provider's
// limits (values of at most 500 characters, keys of at most 40), and only a
// workflow of the order it names is taken from it.
func TestIntentMetadataNamesTheOrdersWorkflow(t *testing.T) {
	for _, key := range []string{"k1", strings.Repeat("%", 255)} {
		id := order.WorkflowID("acme", order.FromHTTP, key)
		md := IntentMetadata(order.IDFor(id), "acme", id)
		for k, v := range md {
			if len(k) > 40 || len(v) > 500 {
				t.Fatalf("metadata %q of %d characters", k, len(v))
			}
		}
		if got := workflowOf(md, "acme", order.IDFor(id)); got != id {
			t.Fatalf("a %d-character workflow ID read back as %q", len(id), got)
		}
		if got := workflowOf(md, "other", order.IDFor(id)); got != "" {
			t.Fatalf("another tenant's order read %q", got)
		}
		if got := workflowOf(md, "acme", "ord_other"); got != "" {
			t.Fatalf("another order read %q", got)
		}
	}
	if md := IntentMetadata("ord_1", "acme", ""); len(md) != 2 {
		t.Fatalf("metadata without a workflow: %v", md)
	}
}
