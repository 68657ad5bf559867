//go:build stack

package worker_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/tenants/fairness"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/workflows"
)

// TestRealHistoriesReplay runs the order workflow's main paths on the real server and
// replays their histories against the current code. With
// ORDERFLOW_RECORD_HISTORIES=1 it also writes them to workflows/testdata, where
// workflows' replay test guards them without a server. Histories of runs started
// before a versioned change are kept there as vN_*.json.
func TestRealHistoriesReplay(t *testing.T) {
	t.Parallel() // its own tenants, task queue and sandbox: it runs beside the package's other slow tests
	h := newHarness(t)
	h.StartWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	histories := map[string]*historypb.History{}

	id, in := h.placeOrder("paid", "pm_card_visa")
	if err := h.execute(t, ctx, id, in).Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	histories["order_paid"] = history(t, ctx, h.Temporal, id)

	id, in = h.placeOrder("declined", "pm_card_chargeDeclined")
	if err := h.execute(t, ctx, id, in).Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	histories["order_declined"] = history(t, ctx, h.Temporal, id)

	id, in = h.placeOrder("cancelled", "pm_card_visa")
	in.CancelWindow = time.Hour
	run := h.execute(t, ctx, id, in)
	stacktest.Eventually(t, 30*time.Second, "the order to be paid", func() bool {
		v, err := h.Temporal.QueryWorkflow(ctx, id, "", workflows.QueryStatus)
		var res workflows.OrderResult
		return err == nil && v.Get(&res) == nil && res.Status == order.StatusPaid
	})
	upd, err := h.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.UpdateCancel, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.OrderResult
	if err := upd.Get(ctx, &res); err != nil || res.Status != order.StatusCancelled || res.RefundID == "" {
		t.Fatalf("cancel update: %+v, %v", res, err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	histories["order_cancelled_after_payment"] = history(t, ctx, h.Temporal, id)

	// Unknown outcomes settled by reading the intent: a saved 500 after the confirm
	// charged (succeeded), and before it ran (confirmed again with the next key); a
	// creation whose answer was lost (created again, the orphan swept).
	for name, faults := range map[string]sandbox.Faults{
		"order_confirm_unknown_read_back":    {Only: "confirm", FailAfter: 1},
		"order_confirm_never_ran_sent_again": {Only: "confirm", FailBefore: 1},
		"order_intent_lost_created_again":    {Only: "create", FailAfter: 1},
		"order_confirm_slow_key_in_use":      {Only: "confirm", LatencyMS: 3000, Slow: 1},
		"order_credentials_refused_at_first": {UnauthorizedMS: 3000},
	} {
		h.Sim.SetFaults(faults)
		id, in = h.placeOrder(name, "pm_card_visa")
		var res workflows.OrderResult
		if err := h.execute(t, ctx, id, in).Get(ctx, &res); err != nil || res.Status != order.StatusPaid {
			t.Fatalf("%s: %+v, %v", name, res, err)
		}
		histories[name] = history(t, ctx, h.Temporal, id)
	}
	h.Sim.SetFaults(sandbox.Faults{})

	// 3-D Secure: the customer authenticates (or fails to) and a webhook's signal
	// wakes the order; one who never does is cancelled at the timeout; one whose
	// order is cancelled meanwhile has the intent cancelled.
	for name, act := range map[string]string{
		"order_3ds_paid_on_signal": "complete", "order_3ds_failed_declined": "fail",
		"order_3ds_abandoned_at_timeout": "", "order_3ds_cancelled_while_waiting": "cancel",
	} {
		id, in = h.placeOrder(name, "pm_card_authenticationRequired")
		in.ActionTimeout = time.Hour
		if act == "" {
			in.ActionTimeout = 3 * time.Second
		}
		run := h.execute(t, ctx, id, in)
		var res workflows.OrderResult
		stacktest.Eventually(t, 30*time.Second, "the order to wait on its customer", func() bool {
			v, err := h.Temporal.QueryWorkflow(ctx, id, "", workflows.QueryStatus)
			return err == nil && v.Get(&res) == nil && res.Status == order.StatusActionRequired
		})
		switch act {
		case "complete", "fail":
			resp, err := http.PostForm(h.SimURL+"/sandbox/3ds/"+res.IntentID, url.Values{"outcome": {act}})
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("authenticate: %v %v", resp, err)
			}
			resp.Body.Close()
			if err := h.Temporal.SignalWorkflow(ctx, id, "", workflows.SignalIntentChanged, res.IntentID); err != nil {
				t.Fatal(err)
			}
		case "cancel":
			upd, err := h.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
				WorkflowID: id, UpdateName: workflows.UpdateCancel, WaitForStage: client.WorkflowUpdateStageCompleted,
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := upd.Get(ctx, &res); err != nil || res.Status != order.StatusCancelled {
				t.Fatalf("cancel update: %+v, %v", res, err)
			}
		}
		want := map[string]order.Status{"complete": order.StatusPaid, "fail": order.StatusPaymentDeclined,
			"": order.StatusCancelled, "cancel": order.StatusCancelled}[act]
		if err := run.Get(ctx, &res); err != nil || res.Status != want {
			t.Fatalf("%s: %+v, %v", name, res, err)
		}
		histories[name] = history(t, ctx, h.Temporal, id)
	}

	// An operator cancels the workflow while the provider confirms: the run
	// compensates (the charge refunded) and ends cancelled.
	h.Sim.SetFaults(sandbox.Faults{Only: "confirm", LatencyMS: 1500, Slow: 1})
	id, in = h.placeOrder("cancelled-by-operator", "pm_card_visa")
	run = h.execute(t, ctx, id, in)
	stacktest.Eventually(t, 30*time.Second, "the confirm to be at the provider", func() bool { return h.Sim.InFlight() == 1 })
	if err := h.Temporal.CancelWorkflow(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); !temporal.IsCanceledError(err) {
		t.Fatalf("cancelled by an operator: %v", err)
	}
	if status, _ := h.orderRow(t, order.IDFor(id)); status != string(order.StatusCancelled) {
		t.Fatalf("cancelled by an operator: the order is %s", status)
	}
	histories["order_cancelled_by_operator"] = history(t, ctx, h.Temporal, id)

	// Terminated while the provider confirms: the reconciler's recovery run reads
	// the intent and pays the order.
	h.Sim.SetFaults(sandbox.Faults{Only: "confirm", LatencyMS: 1500, Slow: 1})
	id, in = h.placeOrder("recovered", "pm_card_visa")
	h.execute(t, ctx, id, in)
	stacktest.Eventually(t, 30*time.Second, "the confirm to be at the provider", func() bool { return h.Sim.InFlight() == 1 })
	if err := h.Temporal.TerminateWorkflow(ctx, id, "", "operator"); err != nil {
		t.Fatal(err)
	}
	intent, err := ledger.New(h.Pool).IntentOfOrder(ctx, order.IDFor(id))
	if err != nil || intent == "" {
		t.Fatalf("the ledger's intent: %q %v", intent, err)
	}
	u := orderstore.Unsettled{Row: orderstore.Row{ID: in.Order.ID, Status: order.StatusPaymentPending, CustomerID: in.Order.CustomerID,
		Currency: in.Order.Currency, Amount: in.Order.Amount, Items: in.Order.Items, WorkflowID: id}, Tenant: h.tenant}
	if err := worker.NewEngine(h.Temporal, stackConverter(t), h.Env["TEMPORAL_NAMESPACE"], h.Queue, fairness.Weights{}, in.Policy).Recover(ctx, u, intent); err != nil {
		t.Fatal(err)
	}
	if err := h.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil || res.Status != order.StatusPaid {
		t.Fatalf("recovered: %+v, %v", res, err)
	}
	histories["order_recovered"] = history(t, ctx, h.Temporal, id)

	// Refunded in part elsewhere: FollowPayment moves the paid order.
	id = order.WorkflowID(h.tenant, order.FromHTTP, "paid")
	_, ref := h.orderRow(t, order.IDFor(id))
	elsewhere := provider.New(provider.Config{URL: h.SimURL, Timeout: 5 * time.Second}, nil)
	if _, err := elsewhere.RefundIntent(ctx, "dashboard-1", ref, 100, nil); err != nil {
		t.Fatal(err)
	}
	if err := workflows.StartFollow(ctx, h.Temporal, h.Queue, fairness.Weights{}, order.Order{ID: order.IDFor(id), Tenant: h.tenant, WorkflowID: id,
		Amount: 2598, Currency: "USD"}, ref, "dashboard-1"); err != nil {
		t.Fatal(err)
	}
	followed := h.Temporal.GetWorkflow(ctx, workflows.FollowWorkflowID(id, "dashboard-1"), "")
	var fr activities.FollowResult
	if err := followed.Get(ctx, &fr); err != nil || fr.Status != order.StatusPartiallyRefunded || fr.Refunded != 100 || !fr.Changed {
		t.Fatalf("followed: %+v, %v", fr, err)
	}
	histories["follow_partially_refunded"] = history(t, ctx, h.Temporal, followed.GetID())
	h.Sim.SetFaults(sandbox.Faults{})

	// Prefer: wait as the API runs it: the start and the settled update in one
	// call, answered PAID while a cancel window keeps the workflow running.
	req, err := orders.DecodeRequest([]byte(`{"customer_id":"cus_1","currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":500}],"payment_method":"pm_card_visa"}`))
	if err != nil {
		t.Fatal(err)
	}
	placed := h.APIIntake(3*time.Second).Place(ctx, h.tenant, "settled-update", req, 20*time.Second)
	if placed.Status != http.StatusCreated {
		t.Fatalf("Prefer: wait placement: %d %s %v", placed.Status, placed.Body, placed.Err)
	}
	id = order.WorkflowID(h.tenant, order.FromHTTP, "settled-update")
	if err := h.Temporal.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	histories["order_paid_settled_update"] = history(t, ctx, h.Temporal, id)

	replayAndRecord(t, histories)
}

// replayAndRecord replays each history against the current workflows and, with
// ORDERFLOW_RECORD_HISTORIES=1, writes it to workflows/testdata as name.json.
func replayAndRecord(t *testing.T, histories map[string]*historypb.History) {
	t.Helper()
	// The histories are encrypted with the stack's keys, as the worker wrote them.
	codec := stackCodec(t)
	dc, fc := payloadcodec.Converters(codec)
	replayer, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{DataConverter: dc, FailureConverter: fc})
	if err != nil {
		t.Fatal(err)
	}
	replayer.RegisterWorkflow(workflows.Order)
	replayer.RegisterWorkflow(workflows.FollowPayment)
	replayer.RegisterWorkflow(workflows.Refund)
	logger := tlog.NewStructuredLogger(stacktest.Logger(t))
	for name, hist := range histories {
		if err := replayer.ReplayWorkflowHistory(logger, hist); err != nil {
			t.Fatalf("replay %s: %v", name, err)
		}
		if os.Getenv("ORDERFLOW_RECORD_HISTORIES") == "1" {
			// Stored decrypted: the stack's key is its own, the fixtures are everyone's.
			stacktest.WalkPayloads(hist, func(p *commonpb.Payload) {
				dec, err := codec.Decode([]*commonpb.Payload{p})
				if err != nil {
					t.Fatal(err)
				}
				if dec[0] != p {
					proto.Reset(p)
					proto.Merge(p, dec[0])
				}
			})
			b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("..", "workflows", "testdata", name+".json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func history(t *testing.T, ctx context.Context, c client.Client, id string) *historypb.History {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, e)
	}
	return hist
}
