// Package worker builds orderflow's Temporal worker: what it runs, with which limits,
// and how long a stop waits for in-flight activities.
package worker

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/workflows"
)

// Options are the worker's limits.
type Options struct {
	TaskQueue                  string
	MaxConcurrentActivities    int
	MaxConcurrentWorkflowTasks int
	// StopTimeout is how long Stop waits for running activities before handing them
	// back to Temporal. The SDK's default is 0 s, which abandons them at once.
	StopTimeout time.Duration
	// Interceptors wrap the worker's activities (the retry gauge).
	Interceptors []interceptor.WorkerInterceptor
	// Eager asks Temporal (when its dynamic config allows it) to hand an activity
	// straight back to this worker when the workflow task that scheduled it
	// completes and a slot is free, instead of through matching. Off by default:
	// a task that skips matching skips its fair queue, and tenants' weights then
	// no longer split the worker's slots.
	Eager bool
}

// Activities are the activity structs the worker runs.
type Activities struct {
	Orders   *activities.Orders
	Payments *activities.Payments
	Events   *activities.Events
	// Reconciler runs reconcile passes; nil in a worker that runs none.
	Reconciler *Reconciler
	// Kinds register the workflows and activities of the kinds added beside
	// orders and refunds (a team's), on the same task queue.
	Kinds []func(sdkworker.Registry)
}

// NewActivities builds the activities of one worker process: the order store and
// the payments ledger on pool, the provider, and the events writer (t traces each
// publish; nil for none). The payment metrics register in reg.
func NewActivities(pool *pgxpool.Pool, pay activities.Provider, events activities.MessageWriter, reg prometheus.Registerer, t *tracing.Tracing) Activities {
	payments := activities.NewPayments(pool, pay, activities.NewPaymentMetrics(reg))
	return Activities{
		Orders:   activities.NewOrders(pool),
		Payments: payments,
		Events:   activities.NewEvents(events, t),
	}
}

// New returns a worker on o.TaskQueue with the order workflows and their
// activities: workflows.Order, which orders start, and workflows.Refund, which
// refund requests start.
func New(c client.Client, o Options, a Activities) sdkworker.Worker {
	w := sdkworker.New(c, o.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize:     o.MaxConcurrentActivities,
		MaxConcurrentWorkflowTaskExecutionSize: o.MaxConcurrentWorkflowTasks,
		WorkerStopTimeout:                      o.StopTimeout,
		Interceptors:                           o.Interceptors,
		DisableEagerActivities:                 !o.Eager,
	})
	RegisterWorkflows(w)
	w.RegisterActivity(a.Orders)
	w.RegisterActivity(a.Payments)
	w.RegisterActivity(a.Events)
	for _, register := range a.Kinds {
		register(w)
	}
	if a.Reconciler != nil {
		w.RegisterActivityWithOptions(a.Reconciler.Reconcile, activity.RegisterOptions{Name: workflows.ReconcileActivity})
	}
	return w
}

// RegisterWorkflows registers the workflows this build runs in r: a worker, or a
// replayer that checks running histories against this build (worker shadow).
func RegisterWorkflows(r sdkworker.WorkflowRegistry) {
	r.RegisterWorkflow(workflows.Order)
	r.RegisterWorkflow(workflows.Reconcile)
	r.RegisterWorkflow(workflows.FollowPayment)
	r.RegisterWorkflow(workflows.Refund)
}
