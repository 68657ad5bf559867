package intake

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/platform/temporalclient"
	"github.com/orderflow/orderflow/tenants/fairness"
)

// Starter starts any kind's workflows the ingress's way: under the ID its key
// derives, never reusing the ID of a closed run, with the tenant as fairness key.
type Starter struct {
	c         client.Client
	dc        converter.DataConverter // the client's, to read a workflow's input
	taskQueue string
	fair      fairness.Weights
	eager     bool // first workflow tasks inline with their starts
	waited    bool // a caller waits: fairness.Waited
	// attrs are the kind's own search attributes, beside its kind and tenant.
	attrs []temporal.SearchAttributeUpdate
}

// With is the starter whose workflows also start with the kind's own search
// attributes (an order's status).
func (s Starter) With(attrs ...temporal.SearchAttributeUpdate) Starter {
	s.attrs = append(s.attrs[:len(s.attrs):len(s.attrs)], attrs...)
	return s
}

// Client is the Temporal client the starter starts with: a kind's updates go
// through it.
func (s Starter) Client() client.Client { return s.c }

// StartOptions are the options of a start that finds a running or closed
// workflow under the ID (USE_EXISTING), without eager start: what a kind's
// Update-with-Start uses.
func (s Starter) StartOptions(tenant, workflowID string) client.StartWorkflowOptions {
	return s.options(tenant, workflowID, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, false)
}

// Start starts the workflow, or finds it: a running workflow absorbs the
// duplicate, and so does a closed one, whose ID can never start a second run.
func (s Starter) Start(ctx context.Context, tenant, workflowID string, workflow, input any) (Run, error) {
	run, err := s.c.ExecuteWorkflow(ctx, s.eagerly(s.options(tenant, workflowID, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, false)), workflow, input)
	if err != nil {
		return nil, fmt.Errorf("start workflow %s: %w", workflowID, err)
	}
	return run, nil
}

// StartNew starts the workflow; created is false when the ID exists, running or
// closed (and still retained).
func (s Starter) StartNew(ctx context.Context, tenant, workflowID string, workflow, input any) (bool, error) {
	_, err := s.c.ExecuteWorkflow(ctx, s.eagerly(s.options(tenant, workflowID, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, true)), workflow, input)
	var exists *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &exists):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("start workflow %s: %w", workflowID, err)
	}
	return true, nil
}

// eagerly asks, when the Setup says so, for the workflow's first task inline
// with its start when a worker of the task queue runs on the same client (the
// Kafka consumer's, in the worker's process): the task skips matching, and with
// it its fair queue. Elsewhere (the API) the SDK asks for nothing. No worker here
// uses build-ID versioning, which eager start would not respect.
func (s Starter) eagerly(o client.StartWorkflowOptions) client.StartWorkflowOptions {
	o.EnableEagerStart = s.eager
	return o
}

// Input reads the input of the workflow's current run into v (a run continued as
// new carries the same request).
func (s Starter) Input(ctx context.Context, workflowID string, v any) error {
	return temporalclient.Input(ctx, s.c, s.dc, workflowID, v)
}

func (s Starter) options(tenant, workflowID string, conflict enumspb.WorkflowIdConflictPolicy, errIfStarted bool) client.StartWorkflowOptions {
	priority := s.fair.Priority(tenant)
	if s.waited {
		priority.PriorityKey = fairness.Waited
	}
	return client.StartWorkflowOptions{
		ID:                                       workflowID,
		TaskQueue:                                s.taskQueue,
		WorkflowIDConflictPolicy:                 conflict,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: errIfStarted,
		Priority:                                 priority,
		TypedSearchAttributes:                    identity.SearchAttributes(workflowID, tenant, s.attrs...),
	}
}
