package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/orderflow/orderflow/tenants"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/temporalclient"
	"github.com/orderflow/orderflow/workflows"
)

// maxLostPages bounds the search for a lost order's workflow: a tenant that
// started more than this many pages of orders in the window leaves the charge
// unchecked, never refunded on a guess.
const (
	lostPageSize = 1000
	maxLostPages = 50
)

// Known returns what the order's workflow says of it: the order from its
// current run's input, and its payment from its result (closed) or its status
// query (running). False when Temporal no longer has it, or it closed without a
// result (terminated, failed, timed out).
func (e *Engine) Known(ctx context.Context, workflowID string) (reconcile.Known, bool, error) {
	d, err := e.c.DescribeWorkflow(ctx, workflowID, "")
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		return reconcile.Known{}, false, nil
	case err != nil:
		return reconcile.Known{}, false, fmt.Errorf("describe %s: %w", workflowID, err)
	}
	var res workflows.OrderResult
	switch d.RawResponse.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		v, err := e.c.QueryWorkflow(ctx, workflowID, "", workflows.QueryStatus)
		if err == nil {
			err = v.Get(&res)
		}
		if err != nil {
			return reconcile.Known{}, false, fmt.Errorf("query %s: %w", workflowID, err)
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		if err := e.c.GetWorkflow(ctx, workflowID, "").Get(ctx, &res); err != nil {
			return reconcile.Known{}, false, fmt.Errorf("result of %s: %w", workflowID, err)
		}
	default:
		return reconcile.Known{}, false, nil
	}
	var in workflows.PlaceOrder
	if err := e.input(ctx, workflowID, &in); err != nil {
		return reconcile.Known{}, false, err
	}
	return reconcile.Known{Order: in.Order, Status: res.Status, IntentID: res.IntentID, ChargeID: res.ChargeID}, true, nil
}

// input decodes the input of the workflow's current run.
func (e *Engine) input(ctx context.Context, workflowID string, v any) error {
	return temporalclient.Input(ctx, e.c, e.dc, workflowID, v)
}

// orderTypes are the workflow types of orders: the current one and the frozen
// one that runs started before it still run on (worker.go registers both).
const orderTypes = "'Order', 'OrderWorkflow'"

// Lost finds the workflow of the tenant's order among the order workflows of
// the tenant, of either type, started between from and to (an order's ID is a
// digest of its workflow's: each listed ID is digested and compared) and
// returns what it says of the order. from is moved back by how long the
// engine's orders wait on their customers: a 3-D Secure order is charged when
// its customer authenticates, up to that long after its intent was made.
func (e *Engine) Lost(ctx context.Context, tenant, orderID string, from, to time.Time) (reconcile.Known, bool, error) {
	if !tenants.Valid(tenant) {
		return reconcile.Known{}, false, nil // and never in a query's text
	}
	query := lostQuery(tenant, from.Add(-e.actionTimeout()), to)
	var token []byte
	for range maxLostPages {
		page, err := e.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: lostPageSize, NextPageToken: token})
		if err != nil {
			return reconcile.Known{}, false, fmt.Errorf("list the workflows of %s: %w", tenant, err)
		}
		for _, ex := range page.GetExecutions() {
			id := ex.GetExecution().GetWorkflowId()
			if strings.HasPrefix(id, order.Kind+":"+tenant+":") && order.IDFor(id) == orderID {
				return e.Known(ctx, id)
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return reconcile.Known{}, false, nil
		}
	}
	return reconcile.Known{}, false, fmt.Errorf("order %s not among the first %d workflows of %s", orderID, maxLostPages*lostPageSize, tenant)
}

// lostQuery lists the order workflows of the tenant (a valid tenant name: no
// quote) started between from and to.
func lostQuery(tenant string, from, to time.Time) string {
	return fmt.Sprintf("WorkflowType IN (%s) AND WorkflowId STARTS_WITH '%s' AND StartTime BETWEEN '%s' AND '%s'",
		orderTypes, order.Kind+":"+tenant+":", from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano))
}

// actionTimeout is how long the engine's orders wait on their customers, as its
// policy sets it.
func (e *Engine) actionTimeout() time.Duration {
	if e.policy.ActionTimeout <= 0 {
		return workflows.DefaultActionTimeout
	}
	return e.policy.ActionTimeout
}

// Retention is how long Temporal keeps a closed workflow: the namespace's
// retention, read each time (an operator may change it).
func (e *Engine) Retention(ctx context.Context) (time.Duration, error) {
	d, err := e.c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: e.namespace})
	if err != nil {
		return 0, fmt.Errorf("describe namespace %s: %w", e.namespace, err)
	}
	return d.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(), nil
}
