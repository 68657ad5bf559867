package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/payments/reconcile"
)

// ReconcileSchedule is the ID of the Schedule that starts Reconcile (worker
// bootstrap creates it), and of the runs it starts.
const ReconcileSchedule = "orderflow-reconcile"

// ReconcileActivity is the name of the activity that runs a pass.
const ReconcileActivity = "Reconcile"

// Reconcile is one reconcile pass, started by its Schedule, which runs one at a
// time: the pass is one activity, heartbeating, tried three times; the next pass
// takes what a failed one left.
func Reconcile(ctx workflow.Context) (reconcile.Report, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 5 * time.Second, MaximumAttempts: 3},
	})
	var rep reconcile.Report
	err := workflow.ExecuteActivity(ctx, ReconcileActivity).Get(ctx, &rep)
	return rep, err
}
