package intake

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/workflows"
)

// Starter starts OrderWorkflow so that a duplicate start lands on the existing
// workflow, running or closed.
type Starter struct {
	c            client.Client
	taskQueue    string
	cancelWindow time.Duration
}

// NewStarter returns a starter for the task queue.
func NewStarter(c client.Client, taskQueue string, cancelWindow time.Duration) *Starter {
	return &Starter{c: c, taskQueue: taskQueue, cancelWindow: cancelWindow}
}

// Start starts (or finds) the order's workflow and returns its run.
func (s *Starter) Start(ctx context.Context, o order.Order) (client.WorkflowRun, error) {
	run, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        o.WorkflowID,
		TaskQueue: s.taskQueue,
		// A running workflow absorbs the duplicate...
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// ...and so does a closed one: its ID can never start a second run.
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: false,
	}, workflows.OrderWorkflow, workflows.PlaceOrder{Order: o, CancelWindow: s.cancelWindow})
	if err != nil {
		return nil, fmt.Errorf("start workflow %s: %w", o.WorkflowID, err)
	}
	return run, nil
}
