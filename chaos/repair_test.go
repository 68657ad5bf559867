//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/operator/repair"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker"
)

// TestChaosRepairAfterABadDeploy deploys a build that fails every order after its
// charge: 200 orders end Failed, charged once each. With the good build back, a
// dry run lists the 200 and resets none; the repair resets each to its last
// workflow task, and the 200 end PAID with one charge each and nothing refunded,
// the re-run sending the keys of the first. A second repair, as the command runs
// it, resets nothing.
func TestChaosRepairAfterABadDeploy(t *testing.T) {
	const n = 200
	r := newRig(t)
	bad := r.startBadDeploy(t)
	ids := r.placeDirectly(t, "repair", n)
	failed := fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Failed'", r.Queue)
	stacktest.Eventually(t, 3*time.Minute, "every order failed by the bad deploy", func() bool { return r.runsOf(t, failed) == n })
	bad.Stop()
	if charged := r.chargedOnce(ids); charged != n || r.paidOf(t, r.tenant) != 0 {
		t.Fatalf("after the bad deploy: %d of %d orders charged once, %d paid", charged, n, r.paidOf(t, r.tenant))
	}
	r.startWorker(t, nil)

	query := failed + " AND WorkflowType = 'Order'"
	dry := r.repair(t, repair.Options{Query: query, ResetTo: repair.ResetLast, Rate: 100, DryRun: true})
	all := fmt.Sprintf("TaskQueue = '%s'", r.Queue)
	if dry.WouldReset != n || dry.Reset != 0 || dry.Listed != n || r.runsOf(t, all) != n {
		t.Fatalf("dry run: %s; %d runs", dry, r.runsOf(t, all))
	}
	first := r.repair(t, repair.Options{Query: query, ResetTo: repair.ResetLast, Rate: 100, Reason: "bad deploy",
		Findings: reconcile.NewStore(r.Pool)})
	if first.Reset != n || first.Failed != 0 {
		t.Fatalf("repair: %s", first)
	}
	if err := stacktest.Progressing(time.Minute, 5*time.Minute, n, func() int { return r.paidOf(t, r.tenant) }); err != nil {
		r.diagnose(t)
		t.Fatalf("waiting for the %d repaired orders to be paid: %v", n, err)
	}

	second := r.repairCommand(t, query)
	if want := fmt.Sprintf("repair: listed %d, reset 0, skipped %d, failed 0 (skipped: not_current %d)", n, n, n); !strings.Contains(second, want) {
		t.Fatalf("second repair printed no %q:\n%s", want, second)
	}
	var distinct int
	stacktest.Eventually(t, time.Minute, "an OrderPaid event per order", func() bool { _, distinct = r.events(t, n); return distinct >= n })
	charged, runs, refunds := r.chargedOnce(ids), r.runsOf(t, all), len(r.Sim.Refunds())
	balanced, pending := r.payments(t)
	unrepaired := r.count(t, `SELECT count(*) FROM reconcile_findings WHERE kind = $1 AND tenant = $2`, reconcile.KindRepairFailed, r.tenant)
	line := fmt.Sprintf("%-44s orders=%d failed=%d dry-run=%d reset=%d second-reset=0 paid=%d charged-once=%d refunds=%d runs=%d events=%d payments-net=amount:%d/%d findings=%d",
		"repair: a bad deploy failed orders after charge", n, n, dry.WouldReset, first.Reset, r.paidOf(t, r.tenant), charged, refunds, runs, distinct, balanced, n, unrepaired)
	t.Log(line)
	appendSummary(line)
	if charged != n || runs != 2*n || refunds != 0 || distinct != n || balanced != n || pending != 0 || unrepaired != 0 {
		t.Fatalf("the repair did not balance: %s", line)
	}
}

// startBadDeploy runs, in the test process, a worker of this build whose order
// workflow panics at the first step after its charge succeeded: the bad deploy.
// A panic fails the workflow, as sdkworker.FailWorkflow asks.
func (r *rig) startBadDeploy(t *testing.T) sdkworker.Worker {
	t.Helper()
	writer := kafkaclient.NewWriter(r.Kafka, r.Topic)
	t.Cleanup(func() { _ = writer.Close() })
	acts := worker.NewActivities(r.Pool, provider.New(provider.Config{URL: r.SimURL, Timeout: 5 * time.Second}, nil), writer, prometheus.NewRegistry(), r.Tracing)
	w := sdkworker.New(r.Temporal, r.Queue, sdkworker.Options{WorkflowPanicPolicy: sdkworker.FailWorkflow,
		Interceptors: []interceptor.WorkerInterceptor{&panicAfterCharge{}}, MaxConcurrentActivityExecutionSize: 50, MaxConcurrentWorkflowTaskExecutionSize: 20})
	worker.RegisterWorkflows(w)
	w.RegisterActivity(acts.Orders)
	w.RegisterActivity(acts.Payments)
	w.RegisterActivity(acts.Events)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop) // a second Stop does nothing
	return w
}

// panicAfterCharge is the bad deploy's change: the step an order schedules after
// its PayIntent succeeded panics.
type panicAfterCharge struct {
	interceptor.WorkerInterceptorBase
}

func (*panicAfterCharge) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &badInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type badInbound struct {
	interceptor.WorkflowInboundInterceptorBase
}

func (i *badInbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&badOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}})
}

// badOutbound holds one run's charge, to know when it succeeded.
type badOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	charge workflow.Future
}

func (o *badOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.afterCharge(ctx)
	f := o.Next.ExecuteActivity(ctx, activityType, args...)
	if activityType == "PayIntent" {
		o.charge = f
	}
	return f
}

func (o *badOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.afterCharge(ctx)
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (o *badOutbound) afterCharge(ctx workflow.Context) {
	if o.charge != nil && o.charge.IsReady() && o.charge.Get(ctx, nil) == nil {
		panic("a step after the charge: the bad deploy")
	}
}

// placeDirectly places n orders through the API's intake, as a POST without a
// wait does, and returns their workflow IDs.
func (r *rig) placeDirectly(t *testing.T, prefix string, n int) []string {
	t.Helper()
	req, err := orders.DecodeRequest([]byte(orderJSON))
	if err != nil {
		t.Fatal(err)
	}
	in := r.APIIntake(0)
	ids := make([]string, n)
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		key := fmt.Sprintf("%s-%d", prefix, i)
		ids[i] = order.WorkflowID(r.tenant, order.FromHTTP, key)
		g.Go(func() error {
			if res := in.Place(context.Background(), r.tenant, key, req, 0); res.Status != http.StatusAccepted {
				return fmt.Errorf("place %s: %d: %w", key, res.Status, res.Err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// runsOf counts the runs visibility lists for query.
func (r *rig) runsOf(t *testing.T, query string) int {
	t.Helper()
	resp, err := r.Temporal.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		t.Fatalf("count %q: %v", query, err)
	}
	return int(resp.GetCount())
}

// chargedOnce counts the workflows whose order holds exactly one charge at the
// provider.
func (r *rig) chargedOnce(ids []string) int {
	once := 0
	for _, id := range ids {
		if len(r.Sim.ChargesForOrder(order.IDFor(id))) == 1 {
			once++
		}
	}
	return once
}

// repair runs a repair of the rig's namespace as the command does.
func (r *rig) repair(t *testing.T, o repair.Options) repair.Summary {
	t.Helper()
	rep, err := repair.New(r.Temporal, r.Env["TEMPORAL_NAMESPACE"], o)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := rep.Run(context.Background(), func(out repair.Outcome) {
		if out.Action == repair.ActionWouldReset && out.ResetEvent <= 0 {
			t.Errorf("%s would be reset to event %d", out.WorkflowID, out.ResetEvent)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// repairCommand runs `worker orders repair --reset-to last` on query and returns
// its output; it fails the test unless the command exits 0.
func (r *rig) repairCommand(t *testing.T, query string) string {
	t.Helper()
	p := stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), r.workerEnv(nil),
		"orders", "repair", "--query", query, "--reset-to", "last", "--rate", "100")
	code := p.Wait(t, 2*time.Minute)
	out, err := os.ReadFile(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("worker orders repair exited %d:\n%s", code, out)
	}
	return string(out)
}
