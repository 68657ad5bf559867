package intake

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/workflows"
)

// WorkflowID is order:{tenant}:{key}. Tenant names cannot hold ':' or '%'; in the key,
// '%', ':' and anything outside visible ASCII are percent-encoded, so no key of one
// tenant can produce another tenant's ID. Tenants and client keys only: no personal
// data goes into IDs, which Temporal stores in plain text.
func WorkflowID(tenant, key string) string {
	var b strings.Builder
	b.Grow(len("order:") + len(tenant) + 1 + len(key))
	b.WriteString("order:")
	b.WriteString(tenant)
	b.WriteByte(':')
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '%' || c == ':' || c < 0x21 || c > 0x7e {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

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
