package worker

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// retryWatch keeps the gauge of workflow steps (activities) that have been failing
// for more than a minute since they were first scheduled: store and publish steps
// retry through an outage instead of failing the order, so this gauge is how an
// operator sees the outage.
type retryWatch struct {
	interceptor.WorkerInterceptorBase
	gauge prometheus.Gauge
	mu    sync.Mutex
	long  map[string]time.Time // step -> its last failed attempt
}

// stuckAfter is how long a step retries before it counts.
const stuckAfter = time.Minute

// NewRetryWatch registers orderflow_steps_retrying and returns the interceptor that
// keeps it.
func NewRetryWatch(reg prometheus.Registerer) interceptor.WorkerInterceptor {
	w := &retryWatch{
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "orderflow_steps_retrying",
			Help: "Workflow steps (activities) failing and retrying for more than a minute since first scheduled: an outage being waited out.",
		}),
		long: map[string]time.Time{},
	}
	reg.MustRegister(w.gauge)
	return w
}

func (w *retryWatch) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &retryInbound{w: w}
	i.Next = next
	return i
}

type retryInbound struct {
	interceptor.ActivityInboundInterceptorBase
	w *retryWatch
}

func (i *retryInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := i.Next.ExecuteActivity(ctx, in)
	info := activity.GetInfo(ctx)
	i.w.observe(info.WorkflowExecution.ID+"/"+info.ActivityID, err != nil && time.Since(info.ScheduledTime) > stuckAfter)
	return res, err
}

func (w *retryWatch) observe(step string, failingLong bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if failingLong {
		w.long[step] = now
	} else {
		delete(w.long, step)
	}
	for s, at := range w.long { // a step retried elsewhere, or given up, ages out
		if now.Sub(at) > 2*stuckAfter {
			delete(w.long, s)
		}
	}
	w.gauge.Set(float64(len(w.long)))
}
