package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orderflow/orderflow/orders/order"
)

// Scenario 14: what per-customer keys cost an order, on the api and worker of the
// build before them (-base, made by make bench from PERSONAL_BASE) and on this
// build's, the same work in the same run against the same stack.
const (
	newBefore       = "14a. end to end, a new customer per order (build before keys)"
	newThis         = "14b. end to end, a new customer per order (this build)"
	returningBefore = "14c. end to end, one returning customer (build before keys)"
	returningThis   = "14d. end to end, one returning customer (this build)"
)

// personal runs scenario 14: on each build, base first, n orders end to end with
// a new customer each (this build makes a data key per order: the worst case),
// then n of one returning customer (its key made once and cached). It ends on
// this build's processes, as it began.
func (b *bench) personal(ctx context.Context) ([]Result, error) {
	if why := b.baseMissing(); why != "" {
		fmt.Fprintf(b.out, "scenario 14 skipped: %s\n", why)
		return nil, nil
	}
	current := b.bins
	defer func() {
		if b.bins != current {
			if err := b.onBuild(current); err != nil {
				fmt.Fprintln(b.out, "bench: this build's api and worker back:", err)
			}
		}
	}()
	var rs []Result
	own := map[string]float64{} // scenario -> its api and worker's CPU ms per order
	for _, build := range []struct{ bins, tag, fresh, returning string }{
		{b.base, "base", newBefore, returningBefore}, {current, "this", newThis, returningThis},
	} {
		if err := b.onBuild(build.bins); err != nil {
			return nil, fmt.Errorf("%s: %w", build.fresh, err)
		}
		fresh := func(i int) string { return fmt.Sprintf("cus_%s_%s_%d", b.run, build.tag, i) }
		returning := func(int) string { return fmt.Sprintf("cus_%s_%s_returning", b.run, build.tag) }
		for _, p := range []struct {
			name, prefix string
			customer     func(int) string
		}{{build.fresh, "personal-new-" + build.tag, fresh}, {build.returning, "personal-returning-" + build.tag, returning}} {
			r, ms, err := b.personalPart(ctx, p.name, p.prefix, p.customer)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			rs, own[r.Scenario] = append(rs, r), ms
		}
	}
	slices.SortFunc(rs, func(x, y Result) int { return strings.Compare(x.Scenario, y.Scenario) })
	compareBuilds(rs, own)
	return rs, nil
}

// personalPart is one part of scenario 14: a warm-up of one order per client
// (connections, pools, the returning customer's key), then n orders end to end,
// whose CPU is counted until every one of their workflows closed: what a
// workflow does after PAID is its build's too. It also answers the CPU ms per
// order of the part's own api and worker processes.
func (b *bench) personalPart(ctx context.Context, name, prefix string, customer func(int) string) (Result, float64, error) {
	warm := prefix + "-warm"
	if _, _, err := measure(b.conc, b.conc, func(i int) error {
		return b.paidBy(customer(b.n+i), fmt.Sprintf("%s-%d", warm, i), 30*time.Second)
	}); err != nil {
		return Result{Scenario: name}, 0, fmt.Errorf("warm-up: %w", err)
	}
	if err := b.closed(ctx, warm, b.conc); err != nil {
		return Result{Scenario: name}, 0, err
	}
	before, ownBefore := machineCPU(), b.cpuSeconds()
	res, err := b.endToEndBy(ctx, name, prefix, customer)
	if err == nil {
		err = b.closed(ctx, prefix, b.n)
	}
	res.CPUPerOp = cpuPerOp(before, machineCPU(), max(res.N, 1))
	return res, 1000 * (b.cpuSeconds() - ownBefore) / float64(max(res.N, 1)), err
}

// closed waits until the workflows of the n orders keyed prefix-i (as
// endToEndBy keys them) have closed.
func (b *bench) closed(ctx context.Context, prefix string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for i := range n {
		id := order.WorkflowID(b.tenant, order.FromHTTP, fmt.Sprintf("%s-%d", prefix, i))
		if err := b.tc.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			return fmt.Errorf("order %s-%d's workflow: %w", prefix, i, err)
		}
	}
	return nil
}

// onBuild puts the api and worker in bins in place of the running ones: the api
// on its address, the worker on the same requests topic.
func (b *bench) onBuild(bins string) error {
	b.bins = bins
	b.stopWorker()
	if _, err := b.restartAPI(); err != nil {
		return err
	}
	// The load's kept-alive connections were to the api just stopped.
	b.hc.CloseIdleConnections()
	return b.startWorker(b.consuming)
}

// baseMissing says why scenario 14 cannot run, if it cannot: no build before
// per-customer keys (make bench builds none where PERSONAL_BASE is not in the
// checkout's history, as in a tarball).
func (b *bench) baseMissing() string {
	if b.base == "" {
		return "no build before per-customer keys (-base)"
	}
	for _, bin := range []string{"api", "worker"} {
		if _, err := os.Stat(filepath.Join(b.base, bin)); err != nil {
			return fmt.Sprintf("no %s of the build before per-customer keys in %s (make bench builds it from PERSONAL_BASE, which needs the git history)", bin, b.base)
		}
	}
	return ""
}

// compareBuilds notes on this build's results the CPU per order of their own api
// and worker processes (own, by scenario) against the build before's: where
// the keys' work lands, read by process, so neither the machine's other
// processes nor the engine's share dilute it.
func compareBuilds(rs []Result, own map[string]float64) {
	for _, pair := range [][2]string{{newThis, newBefore}, {returningThis, returningBefore}} {
		this, base := own[pair[0]], own[pair[1]]
		for i := range rs {
			if rs[i].Scenario == pair[0] && this > 0 && base > 0 {
				rs[i].Note += fmt.Sprintf("; its api and worker: %.1f ms of CPU per order until its workflows closed, %.2fx of %s's %.1f",
					this, this/base, strings.SplitN(pair[1], ".", 2)[0], base)
			}
		}
	}
}
