package worker

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"

	"github.com/orderflow/orderflow/payments/provider"
)

// TenantOfTasks marks each activity's provider requests with its tenant, read from
// the task's fairness key (inherited from the order's workflow), so the provider
// budget is shared fairly between tenants (provider.Budgeted).
func TenantOfTasks() interceptor.WorkerInterceptor { return &tenantOfTasks{} }

type tenantOfTasks struct {
	interceptor.WorkerInterceptorBase
}

func (*tenantOfTasks) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &tenantInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

type tenantInbound struct {
	interceptor.ActivityInboundInterceptorBase
}

func (i *tenantInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	return i.Next.ExecuteActivity(provider.WithTenant(ctx, activity.GetInfo(ctx).Priority.FairnessKey), in)
}
