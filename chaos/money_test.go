//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// postOrder sends one POST of the rig's order and returns its status and the
// order ID it answered.
func (r *rig) postOrder(t *testing.T, key string) (int, string) {
	t.Helper()
	return r.postBody(t, key, orderJSON)
}

// postBody POSTs body with key and returns the status and the order ID answered.
// A 503 (the API shedding load on a busy machine) is sent again with the same key
// for up to a minute, as a client would.
func (r *rig) postBody(t *testing.T, key, body string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		status, id, _, _ := r.retry(t, key, body)
		if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return status, id
		}
		time.Sleep(time.Second)
	}
}

func (r *rig) paid(t *testing.T, n int) {
	t.Helper()
	paid := func() int { return r.paidOf(t, r.tenant) }
	if err := stacktest.Progressing(2*time.Minute, 5*time.Minute, n, paid); err != nil {
		t.Fatalf("waiting for %d orders to be paid: %v", n, err)
	}
}

// forgetWorkflow deletes a closed workflow as Temporal's retention would.
// Deletion is asynchronous in Temporal (a system workflow does it), and slow when
// the server is busy: ask again every 10 s until the workflow is gone.
func (r *rig) forgetWorkflow(t *testing.T, wf string) {
	t.Helper()
	ctx := context.Background()
	asked := time.Time{}
	stacktest.Eventually(t, 3*time.Minute, "Temporal to forget the workflow", func() bool {
		_, err := r.Temporal.DescribeWorkflow(ctx, wf, "")
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return true
		}
		if time.Since(asked) > 10*time.Second {
			asked = time.Now()
			if _, err := r.Temporal.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
				Namespace: r.Env["TEMPORAL_NAMESPACE"], WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: wf},
			}); err != nil && !errors.As(err, &nf) {
				t.Logf("delete %s: %v", wf, err)
			}
		}
		return false
	})
}

// A client resends an old POST after everything but Postgres forgot it: its key's
// record expired and was purged, Temporal deleted the closed workflow, and the
// provider pruned its idempotency key. The order comes back from Postgres; nothing
// is charged again.
func TestChaosResentAfterEveryoneElseForgot(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	api := r.startAPI(t)
	key := stacktest.Name("old")
	wf := order.WorkflowID(r.tenant, order.FromHTTP, key)
	r.expect(wf)
	status, first := r.postOrder(t, key)
	if status != 202 {
		t.Fatalf("first POST: %d", status)
	}
	r.paid(t, 1)

	ctx := context.Background()
	if _, err := r.Pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE tenant = $1 AND key = $2`, r.tenant, key); err != nil {
		t.Fatal(err)
	}
	r.forgetWorkflow(t, wf)
	r.Sim.Prune()
	// Days later the process that answered first, and the responses it keeps in
	// memory, are long gone.
	api.Signal(syscall.SIGTERM)
	if code := api.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("api exited %d", code)
	}
	r.startAPI(t)

	status, again := r.postOrder(t, key)
	time.Sleep(3 * time.Second) // would a new run charge?
	charges := len(r.Sim.ChargesForOrder(order.IDFor(wf)))
	_, err := r.Temporal.DescribeWorkflow(ctx, wf, "")
	var nf *serviceerror.NotFound
	t.Logf("resent POST: %d with order %s (first %s); charges %d; a new run started: %v", status, again, first, charges, !errors.As(err, &nf))
	if status != 202 || again != first || charges != 1 || !errors.As(err, &nf) {
		t.Fatalf("resent POST answered %d %s, %d charges, workflow started again: %v; want the first order, 1 charge, no run",
			status, again, charges, !errors.As(err, &nf))
	}
	r.oneOrderLeft(t, "POST resent after key, run and provider key expired", fmt.Sprintf("keys=1 orders=1 charges=%d refunds=%d", charges, len(r.Sim.Refunds())))
}

// oneOrderLeft checks, after a row deleted the order's workflow (which the
// ledger line can no longer see), that the tenant has one order and that the
// payments ledger nets one charge, and writes the row's summary line: counts,
// then the ledger's.
func (r *rig) oneOrderLeft(t *testing.T, fault, counts string) {
	t.Helper()
	r.mu.Lock()
	r.keys = nil // the deleted workflow is no longer visible: count the rest by hand
	r.mu.Unlock()
	if n := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, r.tenant); n != 1 {
		t.Fatalf("orders = %d", n)
	}
	balanced, pending := r.payments(t)
	summary(t, fmt.Sprintf("%-44s %s payments-net=amount:%d/1 pending-payments=%d", fault, counts, balanced, pending))
	if balanced != 1 || pending != 0 {
		t.Fatal("payments ledger does not balance")
	}
}

// A server is down for longer than a retry budget used to be, under traffic that
// needs it: Kafka while orders are paid (their OrderPaid waits), Postgres while
// events arrive (their orders wait). Every order ends PAID once it is back, and
// nothing is refunded.
func TestChaosOutageLongerThanABudget(t *testing.T) {
	for _, tc := range []struct {
		service string
		down    time.Duration
		events  bool
	}{
		{"kafka", 40 * time.Second, false},
		{"postgres", 40 * time.Second, true},
	} {
		t.Run(tc.service, func(t *testing.T) {
			r := newRig(t)
			r.startWorker(t, nil)
			r.startAPI(t)
			w := r.writer()
			defer w.Close()
			for i := range 5 { // before the outage, so the requests are in
				if tc.events {
					id := fmt.Sprintf("outage-evt-%d", i)
					r.produce(t, w, id, []byte(id))
				} else {
					r.order(t, fmt.Sprintf("outage-http-%d", i))
				}
			}
			stacktest.Service(t, "stop", tc.service)
			time.Sleep(tc.down)
			stacktest.Service(t, "start", tc.service)
			r.ledger(t, fmt.Sprintf("%s down %s (longer than a step's budget)", tc.service, tc.down))
		})
	}
}

// The provider refuses our credentials for 10 s (a rotated secret) under traffic:
// every order ends PAID once they are accepted again, charged once.
func TestChaosProviderCredentialsRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	wait := r.traffic(t, "creds", 15*time.Second)
	r.flowing(t, 5)
	r.Sim.SetFaults(sandbox.Faults{UnauthorizedMS: 10000})
	wait()
	r.ledger(t, "provider answered 401 for 10s under traffic")
}

// summary prints a fault's line and keeps it for make test's summary.
func summary(t *testing.T, line string) {
	t.Helper()
	t.Log(line)
	appendSummary(line)
}
