package shadow_test

import (
	"time"

	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/workflows"
)

// The drills: changes to the order workflow a rollout could bring, each
// registered in place of workflows.Order.

// orderFunc is the order workflow's signature.
type orderFunc func(workflow.Context, workflows.PlaceOrder) (workflows.OrderResult, error)

// asOrder registers wf as the order workflow, "Order".
func asOrder(wf orderFunc) func(sdkworker.WorkflowRegistry) {
	return func(r sdkworker.WorkflowRegistry) {
		r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: "Order"})
	}
}

// sleepFirst waits before the order: a command the history does not have.
func sleepFirst(ctx workflow.Context, in workflows.PlaceOrder) (workflows.OrderResult, error) {
	if err := workflow.Sleep(ctx, time.Second); err != nil {
		return workflows.OrderResult{}, err
	}
	return workflows.Order(ctx, in)
}

// discount charges 10 % less for an order of at least lines item lines.
func discount(lines int) orderFunc {
	return func(ctx workflow.Context, in workflows.PlaceOrder) (workflows.OrderResult, error) {
		if len(in.Order.Items) >= lines {
			in.Order.Amount -= in.Order.Amount / 10
		}
		return workflows.Order(ctx, in)
	}
}

// logged adds a log line: an honest change.
func logged(ctx workflow.Context, in workflows.PlaceOrder) (workflows.OrderResult, error) {
	workflow.GetLogger(ctx).Info("placing order", "order", in.Order.ID)
	return workflows.Order(ctx, in)
}

// notifiedAfter runs a new activity once the order is done, behind a version:
// an honest change, since runs written before it replay without it.
func notifiedAfter(ctx workflow.Context, in workflows.PlaceOrder) (workflows.OrderResult, error) {
	res, err := workflows.Order(ctx, in)
	if err != nil {
		return res, err
	}
	if workflow.GetVersion(ctx, "shadow-drill", workflow.DefaultVersion, 1) == 1 {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		err = workflow.ExecuteActivity(ctx, "NotifyWarehouse", res.OrderID).Get(ctx, nil)
	}
	return res, err
}

// rekey derives the charge's confirm key another way ("charge-v2"), as a
// change to order.PaymentKey's operation name would.
type rekey struct {
	interceptor.WorkerInterceptorBase
}

func (*rekey) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &rekeyInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type rekeyInbound struct {
	interceptor.WorkflowInboundInterceptorBase
}

func (i *rekeyInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&rekeyOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}})
}

type rekeyOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
}

func (o *rekeyOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	if in, ok := args[0].(activities.PayInput); ok && activityType == "PayIntent" {
		in.ConfirmKey = order.PaymentKey(workflow.GetInfo(ctx).WorkflowExecution.ID, "charge-v2", 0)
		args = append([]any{in}, args[1:]...)
	}
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}
