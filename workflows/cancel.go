package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/orders/order"
)

// ErrNotCancellable is the error type of the cancel update's rejection of an order
// that is past cancelling. A cancel while another is going through is taken: it
// is that cancel retried (its answer was slow), and answers with it.
const ErrNotCancellable = "NotCancellable"

func (r *run) validateCancel() error {
	if r.res.Status.Terminal() || r.res.Fulfilled || r.done {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("order %s can no longer be cancelled: status %s", r.in.Order.ID, r.res.Status), ErrNotCancellable, nil)
	}
	return nil
}

// ErrCancelPending is the error type of the cancel update's answer when the run
// continues as new before the order settled: the cancel is accepted, and the next
// run carries it out.
const ErrCancelPending = "CancelPending"

// cancel asks the main flow to cancel and answers once the order has settled.
func (r *run) cancel(ctx workflow.Context) (OrderResult, error) {
	if !r.cancelRequested { // a retried cancel joins the first one's wait
		r.cancelRequested = true
		r.cancels.SendAsync(true)
	}
	settled := func() bool { return r.res.Status.Terminal() || r.res.Fulfilled || r.done }
	if err := workflow.Await(ctx, func() bool { return settled() || r.resting }); err != nil {
		return r.res, err
	}
	if !settled() {
		return r.res, temporal.NewApplicationError("cancel accepted; the order settles in the workflow's next run", ErrCancelPending)
	}
	return r.res, nil
}

// settled answers UpdateSettled: the order once a waiting client has its answer.
func (r *run) settled(ctx workflow.Context) (OrderResult, error) {
	err := workflow.Await(ctx, func() bool { return Answered(r.res.Status) || r.resting || r.done })
	return r.res, err
}

// Answered reports the statuses that answer a client waiting for its order: the
// ends of a payment, and the wait on a customer (whom the client must send on).
func Answered(s order.Status) bool {
	switch s {
	case order.StatusPaid, order.StatusPaymentDeclined, order.StatusFailed, order.StatusCancelled, order.StatusActionRequired:
		return true
	}
	return false
}
