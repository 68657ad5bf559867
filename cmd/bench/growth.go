package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/worker/retention"
)

// 10. A year of orders. POST, replay and Kafka ingress are measured on the
// tables as they are, then again once idempotency_keys, processed_events and
// orders each hold growthRows more rows (a busy shop's day of live keys, the
// event log's two weeks, a year of closed orders), generated in bulk inside
// PostgreSQL (INSERT … SELECT generate_series, in chunks: no row crosses the
// network). Then the pruner deletes a backlog of growthRows expired event rows
// while POSTs flow, and each store's bytes per order are read.
func (b *bench) growth(ctx context.Context) ([]Result, error) {
	var out []Result
	phase := func(label, prefix, suffix string) error {
		rs, err := b.growthPhase(ctx, label, prefix, suffix)
		out = append(out, rs...)
		return err
	}
	if err := phase("tables as they are", "ge", "-ge"); err != nil {
		return out, err
	}
	sizes, err := b.preload(ctx)
	if err != nil {
		return out, err
	}
	if err := phase(fmt.Sprintf("%s more rows in each table", count(b.rows)), "gf", "-gf"); err != nil {
		return out, err
	}
	prune, err := b.pruneUnderLoad(ctx)
	out = append(out, prune...)
	if err != nil {
		return out, err
	}
	bytes, err := b.bytesPerOrder(ctx, sizes)
	return append(out, bytes), err
}

// growthPhase measures POST and replay with no worker running (so their CPU is
// theirs alone), then Kafka ingress through a worker.
func (b *bench) growthPhase(ctx context.Context, label, prefix, suffix string) ([]Result, error) {
	letters := strings.Fields("a b c")
	if prefix == "gf" {
		letters = strings.Fields("d e f")
	}
	if err := b.prepare(ctx, true); err != nil {
		return nil, err
	}
	if err := b.checkpoint(ctx); err != nil {
		return nil, err
	}
	var out []Result
	before := machineCPU()
	lat, total, err := measure(b.n, b.conc, func(i int) error {
		return b.accepted(fmt.Sprintf("%s-%s-%d", prefix, b.run, i))
	})
	if err != nil {
		return nil, fmt.Errorf("POST: %w", err)
	}
	b.started += b.n
	r := result(fmt.Sprintf("10%s. %s: POST", letters[0], label), b.n, total, lat)
	r.CPUPerOp = cpuPerOp(before, machineCPU(), b.n)
	out = append(out, r)

	before = machineCPU()
	n := replayRounds * b.n
	lat, total, err = measure(n, b.conc, func(i int) error {
		return b.replayed(fmt.Sprintf("%s-%s-%d", prefix, b.run, i%b.n))
	})
	if err != nil {
		return out, fmt.Errorf("replay: %w", err)
	}
	r = result(fmt.Sprintf("10%s. %s: replay", letters[1], label), n, total, lat)
	r.CPUPerOp = cpuPerOp(before, machineCPU(), n)
	out = append(out, r)

	if err := b.prepare(ctx, false); err != nil {
		return out, err
	}
	if err := b.checkpoint(ctx); err != nil {
		return out, err
	}
	topic := b.topics["growth-"+prefix]
	r, err = b.ingress(ctx, fmt.Sprintf("10%s. %s: Kafka ingress", letters[2], label), topic, suffix, prefix+"-"+b.run, true)
	if err != nil {
		return out, err
	}
	return append(out, r), nil
}

// checkpoint has PostgreSQL write its dirty pages before a phase is measured:
// each phase then starts alike, where the checkpoint after the preload's writes
// would spread its own, and the full-page images of every page first written
// after it, over the phase after the preload alone.
func (b *bench) checkpoint(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// count writes a row count as people say it.
func count(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%d million", n/1_000_000)
	case n%1000 == 0:
		return fmt.Sprintf("%d thousand", n/1000)
	}
	return fmt.Sprint(n)
}

// growthChunk rows are inserted per statement, with a progress line each.
const growthChunk = 500_000

// tableSizes are the tables' bytes (rows, indexes and TOAST).
type tableSizes map[string]int64

var grown = []string{"idempotency_keys", "processed_events", "orders"}

func (b *bench) sizes(ctx context.Context) (tableSizes, error) {
	s := tableSizes{}
	for _, t := range grown {
		var n int64
		if err := b.pool.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, t).Scan(&n); err != nil {
			return nil, err
		}
		s[t] = n
	}
	return s, nil
}

// preload adds b.rows rows to each grown table: live keys of another tenant,
// expired event rows of the group the next ingress uses (past EVENTS_RETENTION:
// the pruner's backlog), and closed orders spread over a year. It returns the
// tables' sizes before.
func (b *bench) preload(ctx context.Context) (tableSizes, error) {
	before, err := b.sizes(ctx)
	if err != nil {
		return nil, err
	}
	tenant := "bench-growth-" + b.run
	group := b.group + "-gf"         // the consumer group of the next ingress
	body := strings.Repeat("x", 420) // a stored 202's order, as long as one
	statements := map[string]string{
		"idempotency_keys": `INSERT INTO idempotency_keys (tenant, key, fingerprint, workflow_id, response_status, response_body, created_at, expires_at)
			SELECT $1, 'key-' || i, sha224(i::text::bytea), 'order:' || $1 || ':http:key-' || i, 202, convert_to($4, 'UTF8'),
			       now() - make_interval(secs => i % 86400), now() + make_interval(secs => 86400 - i % 86400)
			FROM generate_series($2::bigint, $3) i`,
		"processed_events": `INSERT INTO processed_events (consumer_group, tenant, event_id, workflow_id, fingerprint, processed_at)
			SELECT $4, $1, 'evt-' || i, 'order:' || $1 || ':evt-' || i, sha224(i::text::bytea),
			       now() - interval '15 days' - make_interval(secs => i % 86400)
			FROM generate_series($2::bigint, $3) i`,
		"orders": `INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status, payment_ref, fingerprint,
			                    created_at, updated_at, paid_at)
			SELECT 'ord_' || $1 || '_' || i, $1, 'order:' || $1 || ':http:key-' || i, 'cus_' || (i % 100000),
			       '[{"sku":"sku-1","quantity":2,"unit_amount":1299}]'::jsonb, 2598, 'USD', 'PAID', 'pi_' || md5($1 || i), sha224(i::text::bytea),
			       now() - make_interval(days => (i % 365)::int), now() - make_interval(days => (i % 365)::int),
			       now() - make_interval(days => (i % 365)::int)
			FROM generate_series($2::bigint, $3) i`,
	}
	began := time.Now()
	for _, t := range grown {
		for from := 1; from <= b.rows; from += growthChunk {
			to := min(from+growthChunk-1, b.rows)
			args := []any{tenant, from, to}
			switch t {
			case "idempotency_keys":
				args = append(args, body)
			case "processed_events":
				args = append(args, group)
			}
			if _, err := b.pool.Exec(ctx, statements[t], args...); err != nil {
				return nil, fmt.Errorf("preload %s: %w", t, err)
			}
			fmt.Fprintf(b.out, "  preload: %s %d/%d rows (%s)\n", t, to, b.rows, time.Since(began).Round(time.Second))
		}
		// Vacuumed now, not by autovacuum while the next phase is measured.
		if _, err := b.pool.Exec(ctx, `VACUUM (ANALYZE) `+t); err != nil {
			return nil, err
		}
	}
	return before, nil
}

// pruneUnderLoad has one pruner delete the preloaded event rows (past their
// retention) while clients POST at the run's concurrency, and measures those
// POSTs against the same POSTs with nothing pruned.
func (b *bench) pruneUnderLoad(ctx context.Context) ([]Result, error) {
	if err := b.prepare(ctx, true); err != nil {
		return nil, err
	}
	if err := b.checkpoint(ctx); err != nil {
		return nil, err
	}
	// post places orders at the run's concurrency, b.n at a time, until stop
	// says so (once, when stop is nil).
	post := func(prefix string, stop func() bool) ([]time.Duration, time.Duration, error) {
		var i atomic.Int64
		var lat []time.Duration
		began := time.Now()
		for {
			l, _, err := measure(b.n, b.conc, func(int) error {
				return b.accepted(fmt.Sprintf("%s-%s-%d", prefix, b.run, i.Add(1)))
			})
			lat = append(lat, l...)
			if err != nil || stop == nil || stop() {
				b.started += int(i.Load())
				return lat, time.Since(began), err
			}
		}
	}
	lat, took, err := post("gq", nil)
	if err != nil {
		return nil, err
	}
	quiet := result("10g. POST, nothing pruned", len(lat), took, lat)

	rules := retention.Defaults.Rules()
	pace := retention.Paced()
	p := retention.NewPruner(b.pool, rules, pace,
		retention.NewMetrics(prometheus.NewRegistry(), rules), slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan struct{})
	var rep retention.Report
	var perr error
	go func() {
		defer close(done)
		rep, perr = p.Pass(ctx)
	}()
	pruned := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	lat, took, err = post("gp", pruned)
	<-done
	if err != nil {
		return nil, err
	}
	if perr != nil {
		return nil, fmt.Errorf("pruning pass: %w", perr)
	}
	if !rep.Leader {
		return nil, errors.New("pruning pass: not the leader")
	}
	during := result("10h. POST while one pruner deletes the event rows past their retention", len(lat), took, lat)
	during.Note = fmt.Sprintf("p99 %.2fx 10g's; the pass deleted %d event rows in %s (%.0f rows/s), %d per statement, statements %.0f%% of the pass's time",
		during.P99ms/quiet.P99ms, rep.Pruned["processed_events"], rep.Took.Round(time.Second), float64(rep.Pruned["processed_events"])/rep.Took.Seconds(),
		pace.Batch, 100*pace.Share)
	return []Result{quiet, during}, nil
}

// bytesPerOrder reads what one order leaves in each store: PostgreSQL's grown
// tables by the preload's growth per row, Temporal's history of a paid order, and
// the Kafka messages of an event-made order.
func (b *bench) bytesPerOrder(ctx context.Context, before tableSizes) (Result, error) {
	r := Result{Scenario: "10i. bytes per order"}
	after, err := b.sizes(ctx)
	if err != nil {
		return r, err
	}
	var notes []string
	for _, t := range grown {
		notes = append(notes, fmt.Sprintf("%s %.0f", t, float64(after[t]-before[t])/float64(b.rows)))
	}
	wf := order.WorkflowID(b.tenant, order.FromEvent, "gf-"+b.run+"-0")
	desc, err := b.tc.DescribeWorkflow(ctx, wf, "")
	if err != nil {
		return r, fmt.Errorf("describe %s: %w", wf, err)
	}
	notes = append(notes, fmt.Sprintf("Temporal history %d (%d events)",
		desc.RawResponse.GetWorkflowExecutionInfo().GetHistorySizeBytes(), desc.RawResponse.GetWorkflowExecutionInfo().GetHistoryLength()))
	event := len(fmt.Sprintf(`{"eventId":"gf-%s-0","tenant":%q,"order":%s}`, b.run, b.tenant, orderJSON))
	notes = append(notes, fmt.Sprintf("Kafka request event %d", event))
	r.Note = "bytes: PostgreSQL " + strings.Join(notes, ", ") + " (PostgreSQL's include indexes; the bench's preload bodies are 420 bytes)"
	return r, nil
}

// growthFigures judge scenario 10: at the grown tables, the CPU per operation of
// the processes that read and write them (PostgreSQL, and the API or the worker)
// within 1.2x, and p99 within 1.5x, of the same operation on the tables as they
// were; POSTs during a pruning pass within 1.5x of those without.
func growthFigures(rs []Result) []Figure {
	var out []Figure
	judge := func(name string, v, base, limit float64, target string) {
		if v > 0 && base > 0 {
			r := math.Round(100*v/base) / 100
			out = append(out, Figure{Name: name, Value: v, Baseline: base, Ratio: r, Target: target, Met: r <= limit})
		}
	}
	for _, op := range []struct{ empty, full, what, process string }{
		{"10a. ", "10d. ", "POST", "api"}, {"10b. ", "10e. ", "replay", "api"}, {"10c. ", "10f. ", "Kafka ingress", "worker"},
	} {
		e, ok1 := find(rs, op.empty)
		f, ok2 := find(rs, op.full)
		if !ok1 || !ok2 {
			continue
		}
		cpu := func(r Result) float64 { return r.CPUPerOp[op.process] + r.CPUPerOp["postgres"] }
		judge(fmt.Sprintf("%s CPU ms per operation, %s + PostgreSQL, grown tables (vs as they were)", op.what, op.process), cpu(f), cpu(e), 1.2, "≤ 1.2x")
		judge(fmt.Sprintf("%s p99 ms, grown tables (vs as they were)", op.what), f.P99ms, e.P99ms, 1.5, "≤ 1.5x")
	}
	quiet, ok1 := find(rs, "10g. ")
	during, ok2 := find(rs, "10h. ")
	if ok1 && ok2 {
		judge("POST p99 ms while a pass prunes (vs none)", during.P99ms, quiet.P99ms, 1.5, "≤ 1.5x")
	}
	return out
}
