//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/tenants/fairness"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/workflows"
)

// reconcileEvery is the rows' reconcile interval.
const reconcileEvery = 3 * time.Second

// reconcileWithin is how long a row waits for what two passes do: the rest is
// room for a busy machine, where a pass beside the CI lanes took over 30 s.
const reconcileWithin = 2*reconcileEvery + 90*time.Second

// newReconciler is a reconciler of the rig's orders against its sandbox.
func (r *rig) newReconciler() *reconcile.Reconciler {
	// The audit pages through every charge of the sandbox, which shares the test
	// process with the other rows' sandboxes: a generous timeout.
	pay := provider.New(provider.Config{URL: r.SimURL, Timeout: 30 * time.Second}, nil)
	dc, _ := payloadcodec.Converters(r.Codec)
	return reconcile.New(worker.NewEngine(r.Temporal, dc, r.Env["TEMPORAL_NAMESPACE"], r.Queue, fairness.Weights{}, workflows.Policy{LookupDelay: time.Second, CancelWindow: r.cancelWindow()}),
		pay, stacktest.TenantOrders{Store: orderstore.New(r.Pool), Tenant: r.tenant}, ledger.New(r.Pool), stacktest.TenantRequests{Store: reconcile.NewStore(r.Pool), Tenant: r.tenant},
		reconcile.NewMetrics(prometheus.NewRegistry()),
		reconcile.Options{Grace: reconcileEvery, Overlap: 10 * time.Minute, FirstLookback: time.Hour, RefundOrphans: true})
}

// audited is what the audits of every rig of the suite found.
var audited struct {
	sync.Mutex
	rigs, orders, charges, found int
}

// audit is the suite's global check, rig by rig: once a row is done, a read-only
// reconcile pass over everything it did finds every charge at its sandbox
// belonging to an order that shows it, and no unsettled order without its
// workflow. TestMain prints the sum.
func (r *rig) audit(t *testing.T) {
	a, err := r.newReconciler().Audit(context.Background(), time.Time{})
	if err != nil {
		t.Errorf("reconcile audit: %v", err)
		return
	}
	audited.Lock()
	audited.rigs, audited.orders, audited.charges, audited.found = audited.rigs+1, audited.orders+a.Orders, audited.charges+a.Charges, audited.found+len(a.Findings)
	audited.Unlock()
	for _, f := range a.Findings {
		t.Errorf("reconcile audit: %s: order %q, %s %d %s: %s", f.Kind, f.OrderID, f.ProviderID, f.Amount, f.Currency, f.Detail)
	}
}

// TestMain runs the suite, then adds the global check's line to its summary.
func TestMain(m *testing.M) {
	code := m.Run()
	audited.Lock()
	name := "reconcile audit of every row"
	if lane := os.Getenv("ORDERFLOW_CHAOS_LANE"); lane != "" {
		name += " (" + lane + " lane)" // make test runs the suite in lanes, each auditing its own rows
	}
	line := fmt.Sprintf("%-44s rigs=%d charges=%d unsettled-orders=%d discrepancies=%d", name,
		audited.rigs, audited.charges, audited.orders, audited.found)
	audited.Unlock()
	fmt.Println(line)
	appendSummary(line)
	os.Exit(code)
}

// reconciler runs the reconcile Schedule for the rig, as worker bootstrap makes it
// (every reconcileEvery, one pass at a time), served by a worker in the test
// process on a queue of its own; its recovery runs go to the rig's worker.
func (r *rig) reconciler(t *testing.T) {
	t.Helper()
	rec := r.newReconciler()
	queue := r.Queue + "-reconcile"
	w := sdkworker.New(r.Temporal, queue, sdkworker.Options{})
	w.RegisterWorkflow(workflows.Reconcile)
	w.RegisterActivityWithOptions(worker.NewReconciler(rec).Reconcile, activity.RegisterOptions{Name: workflows.ReconcileActivity})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	id := stacktest.Name("reconcile")
	h, err := r.Temporal.ScheduleClient().Create(context.Background(), client.ScheduleOptions{
		ID: id, Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: reconcileEvery}}},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action:  &client.ScheduleWorkflowAction{ID: id, Workflow: workflows.Reconcile, TaskQueue: queue},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Delete(context.Background()) })
}

// cancelWindow is the API's, as the rig sets it.
func (r *rig) cancelWindow() time.Duration {
	d, _ := time.ParseDuration(r.apiEnv["CANCEL_WINDOW"])
	return d
}

// operator runs Temporal's CLI on the order's workflow, as an operator would.
func (r *rig) operator(t *testing.T, args ...string) string {
	t.Helper()
	return stacktest.TemporalCLI(t, append(args, "--namespace", r.Env["TEMPORAL_NAMESPACE"])...)
}

// place POSTs an order with key and returns its ID, once the API accepted it.
func (r *rig) place(t *testing.T, key, body string) string {
	t.Helper()
	status, id := r.postBody(t, key, body)
	if status != 202 {
		t.Fatalf("POST %s: %d", key, status)
	}
	return id
}

// settle waits for the workflow of the order placed with key to close.
func (r *rig) settle(t *testing.T, key string) {
	t.Helper()
	r.settleWorkflow(t, r.workflowOf(key))
}

// settleWorkflow waits for the workflow to end.
func (r *rig) settleWorkflow(t *testing.T, wf string) {
	t.Helper()
	if err := r.Temporal.GetWorkflow(context.Background(), wf, "").Get(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// workflowOf is the workflow ID of the order the rig placed with key.
func (r *rig) workflowOf(key string) string { return order.WorkflowID(r.tenant, order.FromHTTP, key) }

// waitStatus waits for the order to reach status.
func (r *rig) waitStatus(t *testing.T, orderID string, status order.Status, within time.Duration) {
	t.Helper()
	stacktest.Eventually(t, within, "the order to be "+string(status), func() bool {
		return r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND status = $2`, orderID, status) == 1
	})
}

// An operator terminates an order's workflow while the provider confirms it
// slowly (15 s): the charge lands with no run to record it. Within two reconcile
// intervals of the charge, plus the time a busy machine takes to run it (up to
// 90 s: 30 s was too little beside the other lanes), the reconciler's recovery
// run has read the intent and the order is PAID, once.
func TestChaosTerminatedWhileTheProviderConfirms(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.Sim.SetFaults(sandbox.Faults{Only: "confirm", LatencyMS: 15000, Slow: 1})
	r.startWorker(t, map[string]string{"PAYMENTS_TIMEOUT": "30s"})
	r.startAPI(t)
	r.reconciler(t)
	id := r.place(t, "terminated", orderJSON)
	stacktest.Eventually(t, time.Minute, "the confirm to be at the provider", func() bool { return r.Sim.InFlight() == 1 })
	r.operator(t, "workflow", "terminate", "--workflow-id", r.workflowOf("terminated"), "--reason", "operator")
	r.waitStatus(t, id, order.StatusPaid, 15*time.Second+2*reconcileEvery+90*time.Second)
	r.settledLedger(t, "reconcile: terminated while the provider confirms", id, order.StatusPaid, 500)
	r.found(t, id, reconcile.KindWorkflowClosed, reconcile.ActionRecoveryStarted)
}

// Terminated while the order waits on its customer, who then authenticates: the
// recovery run waits on the intent again and the order is PAID, once.
func TestChaosTerminatedWhileTheCustomerAuthenticates(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.apiEnv = map[string]string{"PAYMENTS_URL": r.SimURL, "PAYMENT_POLL_INTERVAL": "1s"}
	r.startWorker(t, nil)
	r.startAPI(t)
	r.reconciler(t)
	id, intent := r.awaitCustomer(t, "terminated-3ds")
	r.operator(t, "workflow", "terminate", "--workflow-id", r.workflowOf("terminated-3ds"), "--reason", "operator")
	r.customerActs(t, intent, "complete")
	r.waitStatus(t, id, order.StatusPaid, 2*reconcileEvery+time.Minute)
	r.settledLedger(t, "reconcile: terminated while 3-D Secure waits", id, order.StatusPaid, 500)
}

// An operator cancels the workflow while the provider confirms slowly: the run
// compensates (the intent's charge refunded) and the order is CANCELLED, net 0.
func TestChaosWorkflowCancelledDuringThePayment(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.Sim.SetFaults(sandbox.Faults{Only: "confirm", LatencyMS: 10000, Slow: 1})
	r.startWorker(t, map[string]string{"PAYMENTS_TIMEOUT": "30s"})
	r.startAPI(t)
	id := r.place(t, "cancelled-run", orderJSON)
	stacktest.Eventually(t, time.Minute, "the confirm to be at the provider", func() bool { return r.Sim.InFlight() == 1 })
	r.operator(t, "workflow", "cancel", "--workflow-id", r.workflowOf("cancelled-run"))
	r.settledLedger(t, "reconcile: workflow cancelled during the payment", id, order.StatusCancelled, 0)
}

// With a 5 s cancel window, a paid order's cancel is refused once the window has
// passed; an operator resets the workflow to its first task, and a cancel is
// still refused: the new run's window is anchored to the recorded payment.
func TestChaosResetNeverReopensTheCancelWindow(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.apiEnv = map[string]string{"CANCEL_WINDOW": "5s"}
	r.startWorker(t, nil)
	r.startAPI(t)
	id := r.place(t, "reset", orderJSON)
	wf := r.workflowOf("reset")
	r.settle(t, "reset")
	if code := r.cancel(t, id); code != http.StatusConflict {
		t.Fatalf("cancel after the window: %d, want 409", code)
	}
	r.operator(t, "workflow", "reset", "--workflow-id", wf, "--type", "FirstWorkflowTask", "--reason", "operator")
	if code := r.cancel(t, id); code != http.StatusConflict {
		t.Fatalf("cancel after the reset: %d, want 409", code)
	}
	r.settle(t, "reset")
	r.settledLedger(t, "reconcile: reset after the cancel window", id, order.StatusPaid, 500)
	if n := len(r.Sim.Refunds()); n != 0 {
		t.Fatalf("%d refunds", n)
	}
}

// 3-D Secure fails and the order is declined; the customer then confirms the
// intent with another card through its client secret, as Stripe.js's "try
// another card" does. The intent was closed with the decline: the provider
// refuses, and nothing is charged.
func TestChaosDeclinedThenAnotherCardThroughTheClientSecret(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.apiEnv = map[string]string{"PAYMENTS_URL": r.SimURL, "PAYMENT_POLL_INTERVAL": "1s"}
	r.startWorker(t, nil)
	r.startAPI(t)
	r.reconciler(t)
	id, intent := r.awaitCustomer(t, "another-card")
	r.customerActs(t, intent, "fail")
	r.waitStatus(t, id, order.StatusPaymentDeclined, time.Minute)
	form := url.Values{"payment_method": {"pm_card_visa"}, "client_secret": {intent + "_secret"}}
	resp, err := http.Post(r.SimURL+"/v1/payment_intents/"+intent+"/confirm", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatalf("the provider took another card on the declined order's intent")
	}
	// Another integration charges the declined order anyway (the Charges API, naming
	// it): the reconciler refunds the charge and reports it.
	elsewhere := provider.New(provider.Config{URL: r.SimURL, Timeout: 5 * time.Second}, nil)
	if _, err := elsewhere.Charge(context.Background(), stacktest.Name("elsewhere"), 500, "USD", "pm_card_visa", id); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, reconcileWithin, "the charge on the declined order to be refunded", func() bool {
		c := r.Sim.ChargesForOrder(id)
		return len(c) == 1 && c[0].AmountRefunded == c[0].Amount
	})
	r.settledLedger(t, "reconcile: declined, then another card", id, order.StatusPaymentDeclined, 0)
	r.found(t, id, reconcile.KindChargeOnUnpaidOrder, reconcile.ActionRefunded)

	// An intent of the order left open (as a release before intents were closed
	// left a declined order's): the reconciler cancels it.
	open, err := elsewhere.CreateIntent(context.Background(), stacktest.Name("left-open"), 500, "USD", "pm_card_visa",
		map[string]string{"order_id": id, "tenant": r.tenant})
	if err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, reconcileWithin, "the open intent to be cancelled", func() bool {
		for _, in := range r.Sim.Intents(id) {
			if in.ID == open.ID {
				return in.Status == "canceled"
			}
		}
		return false
	})
	r.found(t, id, reconcile.KindOpenIntent, reconcile.ActionCancelled)
}

// A charge made at the provider that no order shows (a dashboard, a script, a
// bug): the reconciler refunds it and reports it.
func TestChaosChargeWithoutAnOrderIsRefunded(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.reconciler(t)
	elsewhere := provider.New(provider.Config{URL: r.SimURL, Timeout: 5 * time.Second}, nil)
	stray := order.IDFor(stacktest.Name("stray"))
	ch, err := elsewhere.Charge(context.Background(), stacktest.Name("dashboard"), 700, "USD", "pm_card_visa", stray)
	if err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, reconcileWithin, "the stray charge to be refunded", func() bool {
		c := r.Sim.ChargesForOrder(stray)
		return len(c) == 1 && c[0].AmountRefunded == c[0].Amount
	})
	// The pass records its finding just after the provider's refund answers.
	const q = `SELECT count(*) FROM reconcile_findings WHERE provider_id = $1 AND kind = $2 AND action = $3`
	stacktest.Eventually(t, 10*time.Second, "the stray charge's finding", func() bool {
		return r.count(t, q, ch.ID, reconcile.KindChargeWithoutOrder, reconcile.ActionRefunded) > 0
	})
	n := r.count(t, q, ch.ID, reconcile.KindChargeWithoutOrder, reconcile.ActionRefunded)
	line := "reconcile: a charge with no order              charges=1 refunded=1 findings=" + strconv.Itoa(n)
	t.Log(line)
	appendSummary(line)
	if n != 1 {
		t.Fatalf("%d findings for the stray charge", n)
	}
}

// found checks that the reconciler recorded one finding of kind and action for the
// order.
func (r *rig) found(t *testing.T, orderID, kind, action string) {
	t.Helper()
	const q = `SELECT count(*) FROM reconcile_findings WHERE order_id = $1 AND kind = $2 AND action = $3`
	// A pass records its finding just after it repairs the order.
	stacktest.Eventually(t, 10*time.Second, "the "+kind+" finding", func() bool { return r.count(t, q, orderID, kind, action) > 0 })
	if n := r.count(t, q, orderID, kind, action); n != 1 {
		t.Fatalf("%d %s/%s findings for %s, want 1", n, kind, action, orderID)
	}
}

// A support agent refunds one paid order in full and another in part from the
// provider's dashboard, and a cardholder's bank disputes a third: no webhook
// reaches orderflow, and within two reconcile intervals each order shows what the
// provider holds (REFUNDED; PARTIALLY_REFUNDED with the amount; DISPUTED), its
// event is published, and the ledger nets what the provider holds.
func TestChaosRefundsAndDisputesMadeElsewhere(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	r.reconciler(t)
	ids := map[string]string{}
	for _, key := range []string{"full", "partial", "disputed"} {
		id := r.place(t, key, orderJSON)
		r.waitStatus(t, id, order.StatusPaid, time.Minute)
		ids[key] = id
	}
	intent := func(id string) string {
		var ref string
		if err := r.Pool.QueryRow(context.Background(), `SELECT payment_ref FROM orders WHERE id = $1`, id).Scan(&ref); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	dashboard := provider.New(provider.Config{URL: r.SimURL, Timeout: 5 * time.Second}, nil)
	if _, err := dashboard.RefundIntent(context.Background(), "dashboard-full", intent(ids["full"]), 500, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := dashboard.RefundIntent(context.Background(), "dashboard-partial", intent(ids["partial"]), 200, nil); err != nil {
		t.Fatal(err)
	}
	charge := r.Sim.ChargesForOrder(ids["disputed"])[0].ID
	resp, err := http.PostForm(r.SimURL+"/sandbox/disputes", url.Values{"charge": {charge}})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("dispute: %v %v", resp, err)
	}
	resp.Body.Close()
	within := reconcileWithin
	r.waitStatus(t, ids["full"], order.StatusRefunded, within)
	r.waitStatus(t, ids["partial"], order.StatusPartiallyRefunded, within)
	r.waitStatus(t, ids["disputed"], order.StatusDisputed, within)
	if n := r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND amount_refunded = 200`, ids["partial"]); n != 1 {
		t.Fatalf("the partly refunded order does not show 200 refunded")
	}
	net := func(id string) int64 {
		var n int64
		for _, c := range r.Sim.ChargesForOrder(id) {
			n += c.Amount - c.AmountRefunded
		}
		return n
	}
	balanced, pending := r.payments(t)
	line := fmt.Sprintf("%-44s orders=3 provider-net=%d/%d/%d payments-net=amount:%d/3 pending-payments=%d",
		"reconcile: refunds, a dispute made elsewhere", net(ids["full"]), net(ids["partial"]), net(ids["disputed"]), balanced, pending)
	t.Log(line)
	appendSummary(line)
	if net(ids["full"]) != 0 || net(ids["partial"]) != 300 || net(ids["disputed"]) != 500 || balanced != 3 || pending != 0 {
		t.Fatalf("ledger does not balance: %s", line)
	}
	// Each order's event follows its move to the new status.
	stacktest.Eventually(t, 30*time.Second, "each order's event", func() bool {
		types := r.eventTypes(t)
		for key, want := range map[string]string{"full": activities.EventOrderRefunded, "partial": activities.EventOrderPartiallyRefunded,
			"disputed": activities.EventOrderDisputed} {
			if !slices.Contains(types[ids[key]], want) {
				return false
			}
		}
		return true
	})
	for key, kind := range map[string]string{"full": reconcile.KindRefundElsewhere, "partial": reconcile.KindRefundElsewhere, "disputed": reconcile.KindDispute} {
		r.found(t, ids[key], kind, reconcile.ActionOrderFollowed)
	}
}

// eventTypes reads the events topic to its end: each order's event types.
func (r *rig) eventTypes(t *testing.T) map[string][]string {
	out := map[string][]string{}
	for _, e := range r.readEvents(t) {
		out[e.OrderID] = append(out[e.OrderID], e.Type)
	}
	return out
}

// readEvents reads the events topic to its end. A read that a busy broker leaves
// unanswered for 30 s starts again on a new reader, for two minutes in all.
func (r *rig) readEvents(t *testing.T) []activities.Event {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := r.readEventsOnce(t, 30*time.Second)
		if err == nil {
			return out
		}
		if !errors.Is(err, context.DeadlineExceeded) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		t.Logf("%v; reading again", err)
	}
}

func (r *rig) readEventsOnce(t *testing.T, within time.Duration) ([]activities.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	end := stacktest.EndOffset(t, r.Topic, 0)
	// The reader retries its errors unseen; they are logged, so a read that ends
	// at the deadline says what it met.
	rd := r.Kafka.NewReader(kafka.ReaderConfig{Topic: r.Topic, Partition: 0, MaxWait: kafkaclient.FetchWait,
		ErrorLogger: kafka.LoggerFunc(func(format string, args ...any) { t.Logf("events reader: "+format, args...) })})
	defer rd.Close()
	var out []activities.Event
	contract := stacktest.Contract(t)
	for offset := int64(0); offset < end; {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read events at %d of %d: %w", offset, end, err)
		}
		offset = m.Offset + 1
		if err := contract.CheckEvent(m); err != nil {
			t.Error(err) // every event emitted keeps the published contract
		}
		var e activities.Event
		if err := json.Unmarshal(m.Value, &e); err != nil {
			t.Fatalf("event %q: %v", m.Value, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// A cardholder's bank disputes a paid order's charge and later decides it for the
// merchant: with no reconciler running, the provider's webhooks alone move the
// order to DISPUTED and back to PAID, each with its event; the event bodies are
// never trusted (each delivery is duplicated), the charge's disputes are read.
func TestChaosDisputeWonThroughWebhooks(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.withWebhooks("1s")
	r.startWorker(t, nil)
	r.startAPI(t)
	id := r.place(t, "dispute-won", orderJSON)
	r.waitStatus(t, id, order.StatusPaid, time.Minute)
	dispute := func(path string, form url.Values) string {
		resp, err := http.PostForm(r.SimURL+path, form)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, resp, err)
		}
		defer resp.Body.Close()
		var d struct{ ID string }
		_ = json.NewDecoder(resp.Body).Decode(&d)
		return d.ID
	}
	dp := dispute("/sandbox/disputes", url.Values{"charge": {r.Sim.ChargesForOrder(id)[0].ID}})
	r.waitStatus(t, id, order.StatusDisputed, 30*time.Second)
	dispute("/sandbox/disputes/"+dp+"/close", url.Values{"outcome": {"won"}})
	r.waitStatus(t, id, order.StatusPaid, 30*time.Second)
	stacktest.Eventually(t, 30*time.Second, "the dispute's events", func() bool {
		types := r.eventTypes(t)[id]
		return slices.Contains(types, activities.EventOrderDisputed) && slices.Contains(types, activities.EventOrderDisputeWon)
	})
	r.settledLedger(t, "webhooks: disputed, then won", id, order.StatusPaid, 500)
}

// An operator resets a paid order's workflow to its first task after the provider
// forgot its keys (the sandbox pruned them, as Stripe does after 24 hours): the
// new run sends the same keys, the ledger answers them, and the order stays PAID
// with one charge and one OrderPaid event ID.
func TestChaosResetAfterTheProviderForgotTheKeys(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	id := r.place(t, "reset-forgotten", orderJSON)
	wf := r.workflowOf("reset-forgotten")
	r.settle(t, "reset-forgotten")
	r.Sim.Prune()
	r.operator(t, "workflow", "reset", "--workflow-id", wf, "--type", "FirstWorkflowTask", "--reason", "operator")
	stacktest.Eventually(t, time.Minute, "the reset run to complete", func() bool {
		return stacktest.Runs(t, r.Temporal, wf) == 2 && r.Temporal.GetWorkflow(context.Background(), wf, "").Get(context.Background(), nil) == nil
	})
	r.settledLedger(t, "reconcile: reset after the keys were forgotten", id, order.StatusPaid, 500)
	ids := map[string]bool{}
	stacktest.Eventually(t, 30*time.Second, "both runs' OrderPaid", func() bool {
		paid := 0
		for _, e := range r.paidEvents(t)[id] {
			ids[e] = true
			paid++
		}
		return paid >= 2
	})
	if len(ids) != 1 {
		t.Fatalf("the order's OrderPaid events carry %d event IDs", len(ids))
	}
}

// paidEvents is each order's OrderPaid event IDs on the events topic.
func (r *rig) paidEvents(t *testing.T) map[string][]string {
	out := map[string][]string{}
	for _, e := range r.readEvents(t) {
		if e.Type == activities.EventOrderPaid {
			out[e.OrderID] = append(out[e.OrderID], e.EventID)
		}
	}
	return out
}

// The reconciler's refund of a charge with no order is answered a saved 500 (the
// provider replays it to the key for a day); a support agent meanwhile refunds
// part of a paid order in the dashboard, with no webhook. The passes go on: the
// order is PARTIALLY_REFUNDED within two intervals, the failure is a finding, and
// a later pass refunds the stray charge with a new key, once.
func TestChaosReconcileGoesOnPastAFailedRefund(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	id := r.paidOrder(t, "followed")
	var intent string
	if err := r.Pool.QueryRow(context.Background(), `SELECT payment_ref FROM orders WHERE id = $1`, id).Scan(&intent); err != nil {
		t.Fatal(err)
	}
	elsewhere := provider.New(provider.Config{URL: r.SimURL, Timeout: 5 * time.Second}, nil)
	stray := order.IDFor(stacktest.Name("stray"))
	ch, err := elsewhere.Charge(context.Background(), stacktest.Name("dashboard"), 700, "USD", "pm_card_visa", stray)
	if err != nil {
		t.Fatal(err)
	}
	r.Sim.SetFaults(sandbox.Faults{Only: "refund", FailBefore: 1})
	r.reconciler(t)
	stacktest.Eventually(t, reconcileWithin, "the stray charge's refund to be tried", func() bool {
		return r.Sim.Requests("reconcile:refund:"+ch.ID) > 0
	})
	if _, err := elsewhere.RefundIntent(context.Background(), "dashboard-300", intent, 300, nil); err != nil {
		t.Fatal(err)
	}
	r.waitStatus(t, id, order.StatusPartiallyRefunded, reconcileWithin)
	stacktest.Eventually(t, reconcileWithin, "the stray charge refunded with a new key", func() bool {
		c := r.Sim.ChargesForOrder(stray)
		return len(c) == 1 && c[0].AmountRefunded == c[0].Amount
	})
	if n := r.count(t, `SELECT count(*) FROM reconcile_findings WHERE provider_id = $1`, ch.ID); n != 1 {
		t.Fatalf("%d findings for the stray charge, want 1 (failed, then refunded)", n)
	}
	r.refundLedger(t, "reconcile: goes on past a failed refund", id, order.StatusPartiallyRefunded)
}

// A cardholder's bank disputes the payment of an order cancelled (and refunded)
// in its window, as with credit_not_processed: no webhook reaches orderflow, and
// within two reconcile intervals the order, still CANCELLED, shows the dispute
// in the API, with a finding; the ledger still nets nothing for it.
func TestChaosDisputeOfACancelledOrderShowsOnIt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.apiEnv = map[string]string{"CANCEL_WINDOW": "10m"}
	r.startWorker(t, nil)
	r.startAPI(t)
	r.reconciler(t)
	id := r.place(t, "cancelled-then-disputed", orderJSON)
	r.waitStatus(t, id, order.StatusPaid, time.Minute)
	if code := r.cancel(t, id); code != 200 && code != 202 {
		t.Fatalf("cancel: %d", code)
	}
	r.waitStatus(t, id, order.StatusCancelled, time.Minute)
	charge := r.Sim.ChargesForOrder(id)[0].ID
	resp, err := http.PostForm(r.SimURL+"/sandbox/disputes", url.Values{"charge": {charge}, "reason": {"credit_not_processed"}})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("dispute: %v %v", resp, err)
	}
	resp.Body.Close()
	stacktest.Eventually(t, reconcileWithin, "the cancelled order to show the dispute", func() bool {
		return r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND dispute = 'needs_response'`, id) == 1
	})
	o, err := r.probe.GetOrder(context.Background(), id)
	if err != nil || string(o.Status) != string(order.StatusCancelled) || o.Dispute != "needs_response" {
		t.Fatalf("GET the order: %+v, %v", o, err)
	}
	r.found(t, id, reconcile.KindDispute, reconcile.ActionDisputeNoted)
	balanced, pending := r.payments(t)
	line := fmt.Sprintf("%-44s orders=1 status=%s dispute=%s payments-net=amount:%d/1 pending-payments=%d",
		"reconcile: a dispute of a cancelled order", o.Status, o.Dispute, balanced, pending)
	t.Log(line)
	appendSummary(line)
	if balanced != 1 || pending != 0 {
		t.Fatalf("ledger does not balance: %s", line)
	}
}
