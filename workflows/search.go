package workflows

import (
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/identity"
)

// The search attributes an operator finds workflows by in Temporal's UI and
// `temporal workflow list --query`: the kind (the workflow ID's first segment:
// order, refund), the tenant, and an order's status as its read model has it.
// None is personal data: never the customer or the card. `worker bootstrap` and
// scripts/stack register them (Keyword) in the namespace. Every kind's are
// identity's; the status is the order kind's.
const (
	SearchKind   = identity.SearchKind
	SearchTenant = identity.SearchTenant
	SearchStatus = "OrderflowStatus"
)

// SearchAttributeNames are the attributes to register, all Keyword.
func SearchAttributeNames() []string { return []string{SearchKind, SearchTenant, SearchStatus} }

// StartSearchAttributes are what a workflow of workflowID starts with: its kind
// and tenant, and an order its status (PENDING for a new one).
func StartSearchAttributes(workflowID, tenant string, status order.Status) temporal.SearchAttributes {
	kind, _, _ := strings.Cut(workflowID, ":")
	if kind == order.Kind && status != "" {
		return identity.SearchAttributes(workflowID, tenant, StatusAttribute(status))
	}
	return identity.SearchAttributes(workflowID, tenant)
}

// StatusAttribute is the update of an order's status, for the starts of the
// order kind.
func StatusAttribute(status order.Status) temporal.SearchAttributeUpdate {
	return statusAttribute(string(status))
}

// statusAttribute is the update of an order's status.
func statusAttribute(status string) temporal.SearchAttributeUpdate {
	return temporal.NewSearchAttributeKeyKeyword(SearchStatus).ValueSet(status)
}

// AtWork is the visibility condition of the open workflows the fleet has work
// for: every one but an order waiting for its customer's 3-D Secure (a workflow
// of another kind has no status).
const AtWork = SearchStatus + " IS NULL OR " + SearchStatus + " != '" + string(order.StatusActionRequired) + "'"

// Working is the visibility condition of the open workflows at work whatever
// their age: an order whose charge is not sent yet. One that has waited long
// in the task queue is the fleet's backlog all the same; one whose charge the
// provider is processing, or whose answer waits for a lookup, waits on someone
// outside the fleet, for as long as the provider takes.
const Working = SearchStatus + " = '" + string(order.StatusPending) + "'"
