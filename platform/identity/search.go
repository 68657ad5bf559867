package identity

import (
	"strings"

	"go.temporal.io/sdk/temporal"
)

// The search attributes every kind's workflows carry, by which an operator finds
// them in Temporal's UI and `temporal workflow list --query`: the kind (the
// workflow ID's first segment) and the tenant. A kind may add its own. None is
// personal data. `worker bootstrap` and scripts/stack register them (Keyword).
const (
	SearchKind   = "OrderflowKind"
	SearchTenant = "OrderflowTenant"
)

// SearchAttributes are what a workflow of workflowID starts with: its kind and
// tenant, and the kind's own updates, more.
func SearchAttributes(workflowID, tenant string, more ...temporal.SearchAttributeUpdate) temporal.SearchAttributes {
	kind, _, _ := strings.Cut(workflowID, ":")
	updates := append([]temporal.SearchAttributeUpdate{
		temporal.NewSearchAttributeKeyKeyword(SearchKind).ValueSet(kind),
		temporal.NewSearchAttributeKeyKeyword(SearchTenant).ValueSet(tenant),
	}, more...)
	return temporal.NewSearchAttributes(updates...)
}
