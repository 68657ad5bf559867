package shipment

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/platform/identity"
)

// Input is what a shipment's workflow starts with.
type Input struct {
	Shipment Shipment
}

// Result is the shipment once its workflow has ended.
type Result struct {
	Status    string
	BookingID string
}

// Workflow books the shipment's parcel with the carrier once, whatever retries,
// worker deaths and redeliveries come: the booking's Idempotency-Key is derived
// from the workflow ID, never the attempt or run, so every attempt sends the same
// one and the carrier answers the first booking again. Then it settles the
// shipment's record: BOOKED, or REFUSED when the carrier refused the parcel.
func Workflow(ctx workflow.Context, in Input) (Result, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second, // above the carrier client's 8 s: a worker that died mid-booking is retried soon
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 30 * time.Second, NonRetryableErrorTypes: []string{ErrRefused}},
	})
	var a *Activities // a reference: the worker runs the registered struct's methods
	key := identity.EffectKey(workflow.GetInfo(ctx).WorkflowExecution.ID, "book", 0)
	var b Booked
	err := workflow.ExecuteActivity(ctx, a.Book, BookInput{Shipment: in.Shipment, Key: key}).Get(ctx, &b)
	res := Result{Status: StatusBooked, BookingID: b.ID}
	if err != nil {
		var refused *temporal.ApplicationError
		if !errorsAs(err, &refused) || refused.Type() != ErrRefused {
			return Result{}, err
		}
		res = Result{Status: StatusRefused}
	}
	settle := SettleInput{Shipment: in.Shipment, Status: res.Status, BookingID: res.BookingID}
	if err := workflow.ExecuteActivity(ctx, a.Settle, settle).Get(ctx, nil); err != nil {
		return Result{}, err
	}
	return res, nil
}
