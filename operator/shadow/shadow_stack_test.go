//go:build stack

package shadow_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/operator/shadow"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/worker/workertest"
	"github.com/orderflow/orderflow/workflows"
)

// The drill: orders paid on the real stack, their encrypted histories checked
// against the build, against changes that alter commands or money, and against
// honest changes.
func TestShadowCatchesEachBadChange(t *testing.T) {
	h := workertest.NewOrders(t)
	h.StartWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := payOrders(t, ctx, h)
	queue := fmt.Sprintf("TaskQueue = '%s'", h.Queue)
	orders := queue + " AND WorkflowType = 'Order'" // the drills register the order workflow alone
	listed(t, ctx, h, orders, len(ids))

	check := func(name string, register func(sdkworker.WorkflowRegistry), extra ...interceptor.WorkerInterceptor) (shadow.Summary, []shadow.Failure) {
		t.Helper()
		query := orders
		if name == "this build" {
			query = queue
		}
		dc, _ := payloadcodec.Converters(h.Codec)
		s, err := shadow.New(h.Temporal, h.Env["TEMPORAL_NAMESPACE"], dc, register, shadow.Options{Query: query, Since: time.Hour, Limit: 100}, extra...)
		if err != nil {
			t.Fatal(err)
		}
		var failures []shadow.Failure
		sum, err := s.Run(ctx, func(r shadow.Result) { failures = append(failures, r.Failures...) })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range failures {
			t.Logf("%s: %s", name, f)
		}
		return sum, failures
	}

	if sum, failures := check("this build", worker.RegisterWorkflows); sum.Checked < len(ids) || len(failures) != 0 {
		t.Errorf("this build: checked %d, failures %+v; want %d or more checked, none failed", sum.Checked, failures, len(ids))
	}
	sum, failures := check("timer first", asOrder(sleepFirst))
	if sum.Checked != len(ids) || sum.Failed != len(ids) || sum.ByKind[shadow.Nondeterminism] != len(ids) || !slices.Equal(workflowIDs(failures), ids) {
		t.Errorf("timer first: %+v, failures of %v; want every order nondeterministic", sum, workflowIDs(failures))
	}
	sum, failures = check("confirm key", asOrder(workflows.Order), &rekey{})
	if sum.Failed != len(ids) || sum.ByKind[shadow.Effect] != len(ids) || !slices.Equal(workflowIDs(failures), ids) || !allAt(failures, "$[0].ConfirmKey") {
		t.Errorf("confirm key: %+v, failures of %v; want every order's ConfirmKey", sum, workflowIDs(failures))
	}
	sum, failures = check("discount", asOrder(discount(2)))
	if sum.Failed != 1 || len(failures) != 1 || failures[0].WorkflowID != ids[0] || failures[0].Path != "$[0].Amount" ||
		failures[0].Recorded != "2000" || failures[0].Produced != "1800" {
		t.Errorf("discount: %+v, %+v; want the two-line order's amount, 2000 then 1800", sum, failures)
	}
	for name, wf := range map[string]orderFunc{"log line": logged, "versioned activity after": notifiedAfter} {
		if sum, failures := check(name, asOrder(wf)); sum.Checked != len(ids) || len(failures) != 0 {
			t.Errorf("%s: %+v, %+v; want %d checked, none failed", name, sum, failures, len(ids))
		}
	}
}

// payOrders places three orders, the first with two item lines, and waits until
// each is paid; it returns their workflow IDs, sorted.
func payOrders(t *testing.T, ctx context.Context, h *workertest.Orders) []string {
	t.Helper()
	tenant := stacktest.Name("tenant")
	lines := [][]order.Item{
		{{SKU: "sku-1", Quantity: 1, UnitAmount: 1000}, {SKU: "sku-2", Quantity: 2, UnitAmount: 500}},
		{{SKU: "sku-1", Quantity: 2, UnitAmount: 1299}},
		{{SKU: "sku-3", Quantity: 1, UnitAmount: 700}},
	}
	var ids []string
	var runs []client.WorkflowRun
	for i, items := range lines {
		id := order.WorkflowID(tenant, order.FromHTTP, fmt.Sprintf("shadow-%d", i))
		var amount int64
		for _, it := range items {
			amount += it.UnitAmount * int64(it.Quantity)
		}
		in := workflows.PlaceOrder{Order: order.Order{ID: order.IDFor(id), Tenant: tenant, WorkflowID: id, CustomerID: "cus_1",
			Currency: "USD", Items: items, Amount: amount, PaymentMethod: "pm_card_visa"},
			Policy: workflows.Policy{LookupDelay: workertest.LookupDelay}}
		run, err := h.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: h.Queue,
			TypedSearchAttributes: workflows.StartSearchAttributes(id, tenant, order.StatusPending)}, workflows.Order, in)
		if err != nil {
			t.Fatal(err)
		}
		ids, runs = append(ids, id), append(runs, run)
	}
	for i, run := range runs {
		var res workflows.OrderResult
		if err := run.Get(ctx, &res); err != nil || res.Status != order.StatusPaid {
			t.Fatalf("order %s: %+v, %v; want PAID", ids[i], res, err)
		}
	}
	return ids // sorted: shadow-0, -1, -2
}

// listed waits until visibility lists n runs of query.
func listed(t *testing.T, ctx context.Context, h *workertest.Orders, query string, n int) {
	t.Helper()
	stacktest.Eventually(t, 30*time.Second, "the orders to be listed", func() bool {
		r, err := h.Temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: h.Env["TEMPORAL_NAMESPACE"], Query: query})
		return err == nil && r.GetCount() == int64(n)
	})
}

// workflowIDs are the failures' workflows, each once, sorted.
func workflowIDs(failures []shadow.Failure) []string {
	var ids []string
	for _, f := range failures {
		ids = append(ids, f.WorkflowID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// allAt is whether every failure is an effect at path.
func allAt(failures []shadow.Failure, path string) bool {
	for _, f := range failures {
		if f.Kind != shadow.Effect || f.Path != path {
			return false
		}
	}
	return len(failures) > 0
}
