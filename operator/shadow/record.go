package shadow

import (
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// call is one activity the replayed code scheduled: its type and its arguments,
// serialized as the worker would send them (before the codec).
type call struct {
	activityType string
	args         []byte // a JSON array of the arguments
	err          error  // they could not be serialized
}

// recorder is a worker interceptor that notes every activity (not local ones)
// the workflow code schedules during one replay, in order.
type recorder struct {
	interceptor.WorkerInterceptorBase
	calls []call
}

func (r *recorder) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &recordingInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, r: r}
}

type recordingInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	r *recorder
}

func (i *recordingInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&recordingOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, r: i.r})
}

type recordingOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	r *recorder
}

func (o *recordingOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	// Serialized now: the workflow may change what a pointer argument holds later.
	b, err := toJSON(converter.GetDefaultDataConverter(), args...)
	o.r.calls = append(o.r.calls, call{activityType: activityType, args: b, err: err})
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}
