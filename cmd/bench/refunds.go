package main

import (
	"context"
	"fmt"
	"time"

	orderflow "github.com/orderflow/orderflow/client"
)

// 11. The refund kind through the same ingress: n orders placed and paid first
// (unmeasured), then one refund of a cent per order with its own key (11a), and
// the same keys again (11b), answered from the stored response. Their ratios are
// to the order's start (2) and replay (3) of the same run, and like those they
// are measured with no worker running: the refunds wait in the task queue.
func (b *bench) refunds(ctx context.Context) ([]Result, error) {
	ids := make([]string, b.n)
	if _, _, err := measure(b.n, b.conc, func(i int) error {
		p, err := b.placeAs(b.api, fmt.Sprintf("refunded-%d", i), 30*time.Second)
		if err == nil && p.Status != orderflow.Paid {
			err = fmt.Errorf("order refunded-%d: %s, want PAID", i, p.Status)
		}
		if err == nil {
			ids[i] = p.ID
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("11. the orders to refund: %w", err)
	}
	if err := b.prepare(ctx, true); err != nil {
		return nil, fmt.Errorf("11. stop the worker: %w", err)
	}
	refund := func(i int) error {
		_, err := b.api.RefundOrder(ctx, ids[i%b.n], fmt.Sprintf("refund-%d", i%b.n), orderflow.RefundRequest{Amount: 1})
		return err
	}
	before := machineCPU()
	lat, total, err := measure(b.n, b.conc, refund)
	if err != nil {
		return nil, fmt.Errorf("11a. HTTP refund start: %w", err)
	}
	start := result("11a. HTTP refund start", b.n, total, lat)
	start.CPUPerOp = cpuPerOp(before, machineCPU(), b.n)
	if _, _, err := measure(10*b.conc, b.conc, refund); err != nil {
		return nil, fmt.Errorf("11b. warm-up: %w", err)
	}
	n := replayRounds * b.n
	before = machineCPU()
	lat, total, err = measure(n, b.conc, refund)
	if err != nil {
		return nil, fmt.Errorf("11b. HTTP refund replay: %w", err)
	}
	replay := result("11b. HTTP refund replay", n, total, lat)
	replay.CPUPerOp = cpuPerOp(before, machineCPU(), n)
	var made int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM refunds WHERE tenant = $1`, b.tenant).Scan(&made); err != nil {
		return nil, fmt.Errorf("11. count refunds: %w", err)
	}
	if made != b.n {
		return nil, fmt.Errorf("11. %d refunds recorded for %d keys: a replay made one", made, b.n)
	}
	return []Result{start, replay}, nil
}
