package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/orders/order"
)

// maxTurns bounds the turns of a run's payment loops, each a new key after an
// unknown outcome (a saved 5xx) and about a dozen history events: past it, or
// when the server suggests it, the run continues as new with its state. A run's
// history stays under about 600 events however long the outage lasts, against
// Temporal's limit of 51,200.
const maxTurns = 40

// Resume is what a run hands to the run it continues as: the order as it stands
// and the keys in use, so the next run sends what this one would have. The
// reconciler starts a run with Recover set for an order whose workflow closed
// before its payment settled: Result carries the order's status and the intent
// the ledger names.
type Resume struct {
	Result          OrderResult
	Gens            Generations
	Orphans         bool
	CancelRequested bool
	Ending          *Ending `json:",omitempty"`
	Recover         bool    `json:",omitempty"`
}

// changeClosedDoors is the change after which a declined order closes its intent,
// the cancel window is anchored to the time the order was first paid, a cancel of
// the workflow compensates, and the reconciler's recovery runs exist.
// Its version 2 (searchStatusVersion) also keeps the OrderflowStatus search
// attribute as the read model's status moves.
const changeClosedDoors = "closed-doors"

// searchStatusVersion is changeClosedDoors's version from which a run upserts its
// status search attribute on each move; runs that recorded 1 never do.
const searchStatusVersion = 2

// Generations are the generations of the order's payment keys in use.
type Generations struct {
	Create, Confirm, Refund int
	Refused                 int // refunds the provider refused
}

// Ending is a refund in progress and the end it leads to.
type Ending struct {
	To     order.Status
	Event  string
	Reason string
}

// turn counts one turn of a payment loop, and continues the run as new once it has
// taken maxTurns. An open cancel update answers first (ErrCancelPending).
func (r *run) turn(ctx workflow.Context) error {
	if r.turns++; r.turns < maxTurns && !workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
		return nil
	}
	r.resting = true
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	next := r.in
	next.Resume = &Resume{Result: r.res, Gens: r.gens, Orphans: r.orphans, CancelRequested: r.cancelRequested, Ending: r.ending}
	return workflow.NewContinueAsNewError(ctx, Order, next)
}
