package workflows

import (
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/internal/order"
)

// The search attributes an operator finds workflows by in Temporal's UI and
// `temporal workflow list --query`: the kind (the workflow ID's first segment:
// order, refund), the tenant, and an order's status as its read model has it.
// None is personal data: never the customer or the card. `worker bootstrap` and
// scripts/stack register them (Keyword) in the namespace.
const (
	SearchKind   = "OrderflowKind"
	SearchTenant = "OrderflowTenant"
	SearchStatus = "OrderflowStatus"
)

// SearchAttributeNames are the attributes to register, all Keyword.
func SearchAttributeNames() []string { return []string{SearchKind, SearchTenant, SearchStatus} }

// StartSearchAttributes are what a workflow of workflowID starts with: its kind
// and tenant, and an order its status (PENDING for a new one).
func StartSearchAttributes(workflowID, tenant string, status order.Status) temporal.SearchAttributes {
	kind, _, _ := strings.Cut(workflowID, ":")
	updates := []temporal.SearchAttributeUpdate{
		temporal.NewSearchAttributeKeyKeyword(SearchKind).ValueSet(kind),
		temporal.NewSearchAttributeKeyKeyword(SearchTenant).ValueSet(tenant),
	}
	if kind == order.Kind && status != "" {
		updates = append(updates, statusAttribute(string(status)))
	}
	return temporal.NewSearchAttributes(updates...)
}

// statusAttribute is the update of an order's status.
func statusAttribute(status string) temporal.SearchAttributeUpdate {
	return temporal.NewSearchAttributeKeyKeyword(SearchStatus).ValueSet(status)
}
