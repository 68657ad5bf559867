// Package fairness gives every task of a tenant's order the tenant as its
// fairness key in Temporal's task queues, so one tenant's backlog cannot delay
// another's orders: matching dispatches the keys' tasks in proportion to their
// weights instead of first come, first served. Activities and child workflows
// inherit the key from the workflow that runs them.
package fairness

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/orderflow/orderflow/tenants"

	"go.temporal.io/sdk/temporal"
)

// Weights are the tenants' shares of the task queues; a tenant not named has
// weight 1, as Temporal's default.
type Weights struct{ m map[string]float32 }

// maxWeight bounds a weight: the server clamps larger ones, and a typo should not
// hand one tenant the queue.
const maxWeight = 1000

// Parse reads FAIRNESS_WEIGHTS: "tenant=weight,..." ("" for all equal).
func Parse(spec string) (Weights, error) {
	w := Weights{m: map[string]float32{}}
	for _, item := range strings.Split(spec, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		tenant, v, ok := strings.Cut(item, "=")
		if !ok || !tenants.Valid(tenant) {
			return Weights{}, fmt.Errorf("FAIRNESS_WEIGHTS: %q is not tenant=weight", item)
		}
		f, err := strconv.ParseFloat(v, 32)
		if err != nil || f <= 0 || f > maxWeight || math.IsNaN(f) {
			return Weights{}, fmt.Errorf("FAIRNESS_WEIGHTS: weight of %s must be a number over 0 and at most %d, not %q", tenant, maxWeight, v)
		}
		if _, dup := w.m[tenant]; dup {
			return Weights{}, fmt.Errorf("FAIRNESS_WEIGHTS: %s is named twice", tenant)
		}
		w.m[tenant] = float32(f)
	}
	return w, nil
}

// Weight is the tenant's weight: 1 unless FAIRNESS_WEIGHTS names it.
func (w Weights) Weight(tenant string) float64 {
	if v, ok := w.m[tenant]; ok {
		return float64(v)
	}
	return 1
}

// Priority is the priority of the tenant's workflows: the tenant as the fairness
// key, with its weight (0 leaves Temporal's default, 1).
func (w Weights) Priority(tenant string) temporal.Priority {
	return temporal.Priority{FairnessKey: tenant, FairnessWeight: w.m[tenant]}
}

// Waited is the priority key of a workflow a caller waits for on a connection
// (the API's starts): matching hands out its tasks, and its activities', before
// those of the default level (3: events', follow-ups'), fairly among tenants
// within each level. A topic's lag is where waiting costs no one a connection.
const Waited = 2
