package main

import (
	"context"
	"fmt"

	"github.com/orderflow/orderflow/tenants/fleetrate"
	"github.com/orderflow/orderflow/testkit"
)

// 12. What a fleet budget costs a request: n admitted takes of one tenant's
// budget (the statement every API process runs per request, quota.Limiter) at
// the run's concurrency, from the load generator. Its CPU, with PostgreSQL's,
// is set beside a POST's (scenarios 2 and 3) in the figures.
func (b *bench) fleetBudget(ctx context.Context) (Result, error) {
	const name = "12. fleet budget: one take"
	rates := fleetrate.New(b.pool)
	budget := "api:tenant:" + testkit.Name("bench")
	lim := fleetrate.Limit{Rate: 1e6, Burst: 1e6} // every take admitted: the cost of the common path
	lat, total, err := measure(b.n*replayRounds, b.conc, func(int) error {
		d, err := rates.Take(ctx, budget, lim)
		if err == nil && !d.Allowed {
			err = fmt.Errorf("take refused")
		}
		return err
	})
	return result(name, b.n*replayRounds, total, lat), err
}
