//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// beforeFreeze is the last commit whose API started new orders on OrderWorkflow,
// a workflow type this build no longer has.
const beforeFreeze = "d813aa0"

// TestRolloutGateHoldsABuildThatCannotRunWhatIsOpen deploys this build over a
// release whose orders run OrderWorkflow, a type this build does not have, as the
// worker's shadow init step does: while one of those orders waits on its
// customer's 3-D Secure, the gate fails and names it (and not the paid one); once
// the old worker finished it, the gate passes, this build's worker and API take
// over, and every order nets one charge.
func TestRolloutGateHoldsABuildThatCannotRunWhatIsOpen(t *testing.T) {
	t.Parallel()
	oldWorker := stacktest.BinaryAt(t, beforeFreeze, "cmd/worker")
	oldAPI := stacktest.BinaryAt(t, beforeFreeze, "cmd/api")
	r := newRig(t)
	r.apiEnv = map[string]string{"PAYMENTS_URL": r.SimURL, "PAYMENT_POLL_INTERVAL": "1s"}
	old := stacktest.Start(t, oldWorker, r.workerEnv(nil))
	waitHTTP(t, "http://"+r.opsAddr+"/healthz")
	api := r.startAPIBinary(t, oldAPI, r.apiAddr, r.apiOpsAddr, "0s")

	r.order(t, "gate-paid")
	paid := order.WorkflowID(r.tenant, order.FromHTTP, "gate-paid")
	r.statusAt(t, order.IDFor(paid), order.StatusPaid, time.Minute)
	threeDS, intentID := r.awaitCustomer(t, "gate-3ds")
	waiting := order.WorkflowID(r.tenant, order.FromHTTP, "gate-3ds")
	for _, id := range []string{paid, waiting} {
		if got := r.workflowType(t, id); got != "OrderWorkflow" {
			t.Fatalf("%s ran %s on the old release, want OrderWorkflow", id, got)
		}
	}

	code, out := r.shadow(t)
	if code == 0 || !bytes.Contains(out, []byte(waiting)) || bytes.Contains(out, []byte(paid)) {
		t.Fatalf("gate with an open run of a type this build lacks: exit %d, want it to fail naming %s alone:\n%s", code, waiting, out)
	}

	r.customerActs(t, intentID, "complete")
	r.statusAt(t, threeDS, order.StatusPaid, time.Minute)
	stacktest.Eventually(t, time.Minute, "the old run to close", func() bool {
		d, err := r.Temporal.DescribeWorkflow(context.Background(), waiting, "")
		return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})
	if code, out := r.shadow(t); code != 0 {
		t.Fatalf("gate once every run of the old type closed: exit %d, want 0:\n%s", code, out)
	}

	old.Signal(syscall.SIGTERM)
	api.Signal(syscall.SIGTERM)
	old.Wait(t, 30*time.Second)
	api.Wait(t, 30*time.Second)
	r.startWorker(t, nil)
	r.startAPI(t)
	r.order(t, "gate-new")
	fresh := order.WorkflowID(r.tenant, order.FromHTTP, "gate-new")
	r.statusAt(t, order.IDFor(fresh), order.StatusPaid, time.Minute)
	if got := r.workflowType(t, fresh); got != "Order" {
		t.Errorf("%s ran %s, want Order", fresh, got)
	}
	for _, id := range []string{paid, waiting, fresh} {
		if n := len(r.Sim.ChargesForOrder(order.IDFor(id))); n != 1 {
			t.Errorf("%s: %d charges at the provider, want 1", id, n)
		}
	}
	balanced, pending := r.payments(t)
	line := fmt.Sprintf("%-44s orders=3 balanced=%d pending-payments=%d charges=%d", "rollout: the gate holds a build back", balanced, pending, len(r.Sim.Charges("")))
	t.Log(line)
	appendSummary(line)
	if balanced != 3 || pending != 0 || len(r.Sim.Charges("")) != 3 {
		t.Fatalf("ledger does not balance: %s", line)
	}
}

// shadow runs this build's gate over the rig's task queue, as the worker's init
// step does, and returns its exit code and what it printed.
func (r *rig) shadow(t *testing.T) (int, []byte) {
	t.Helper()
	cmd := exec.Command(stacktest.Binary(t, "cmd/worker"), "shadow", "--query", "TaskQueue = '"+r.Queue+"'", "--since", "1h", "-o", "json")
	cmd.Env = os.Environ()
	for k, v := range r.workerEnv(nil) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out
}

// workflowType is the type of the workflow's first run.
func (r *rig) workflowType(t *testing.T, workflowID string) string {
	t.Helper()
	d, err := r.Temporal.DescribeWorkflow(context.Background(), workflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	return d.RawResponse.GetWorkflowExecutionInfo().GetType().GetName()
}

// cancel asks the API to cancel one of the rig's orders and returns the status.
func (r *rig) cancel(t *testing.T, orderID string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.apiAddr+"/v1/orders/"+orderID+"/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+r.apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
