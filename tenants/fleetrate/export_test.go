package fleetrate

import (
	"context"
	"sync/atomic"
	"time"
)

// LeasesOf returns leases of r's rows of size n (0: adaptive), adding each
// statement they run to count.
func LeasesOf(r *Rates, n int, count *atomic.Int64) *Leases {
	return newLeases(counted{r, count}, LeaseTTL, n, time.Now, afterFunc)
}

type counted struct {
	rows  slots
	count *atomic.Int64
}

func (c counted) lease(ctx context.Context, name string, l Limit, back, want int) (int, time.Duration, error) {
	c.count.Add(1)
	return c.rows.lease(ctx, name, l, back, want)
}
