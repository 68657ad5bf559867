package erasure

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/customers/receipt"
	"github.com/orderflow/orderflow/platform/custkeys"
)

// Statuses of an erasure's record.
const (
	StatusWaiting = "WAITING" // the customer's money can still move
	StatusErased  = "ERASED"
)

// maxWait is the longest pause between two looks at the customer's open orders.
const maxWait = 10 * time.Minute

// EraseCustomer erases a customer and answers the signed receipt.
func EraseCustomer(ctx workflow.Context, in Input) (receipt.Signed, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	var a *Activities
	// An order that can still move money keeps its customer's key: its charge,
	// its cancel, a refund in flight need the payment method sealed under it.
	for wait := 5 * time.Second; ; wait = min(2*wait, maxWait) {
		var open int
		if err := workflow.ExecuteActivity(ctx, a.ErasureOpen, in).Get(ctx, &open); err != nil {
			return receipt.Signed{}, err
		}
		if open == 0 {
			break
		}
		if err := workflow.Sleep(ctx, wait); err != nil {
			return receipt.Signed{}, err
		}
	}
	var found Found
	if err := workflow.ExecuteActivity(ctx, a.ErasureScrub, in).Get(ctx, &found); err != nil {
		return receipt.Signed{}, err
	}
	var keys custkeys.Destroyed
	if err := workflow.ExecuteActivity(ctx, a.ErasureDestroy, in).Get(ctx, &keys); err != nil {
		return receipt.Signed{}, err
	}
	// Another process may still hold a key in its cache this long; the receipt
	// says the data is gone only once no process can read it. A customer that
	// never had a key has nothing cached anywhere.
	if len(keys.Keys) > 0 {
		if err := workflow.Sleep(ctx, custkeys.CacheTTL()); err != nil {
			return receipt.Signed{}, err
		}
	}
	var signed receipt.Signed
	err := workflow.ExecuteActivity(ctx, a.ErasureSign, in, found, keys, workflow.Now(ctx)).Get(ctx, &signed)
	return signed, err
}
