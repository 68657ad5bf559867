// Package retention deletes what outlived its use, table by table, each by a rule
// that says how long its rows are kept and why that is long enough. One process of
// the fleet prunes at a time (a PostgreSQL advisory lock), in batches, oldest rows
// first, so that no statement holds locks or I/O for long while orders are placed.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/orders/order"
)

// Rule is one table's retention: rows whose Column is older than Keep go, oldest
// first. Column must be indexed.
type Rule struct {
	Table  string
	Column string
	// Keep is how long a row is kept past Column; 0 for a column that holds the
	// row's expiry itself (idempotency_keys.expires_at).
	Keep time.Duration
	// where narrows the rows the rule may delete ("" for all of them).
	where string
	// delete removes up to $2 rows older than $1 and returns how many; empty for
	// the plain DELETE of Table's oldest rows.
	delete string
}

// Retentions are the durations of the tables whose retention is configured.
type Retentions struct {
	// Events is how long processed_events rows keep deduplicating redeliveries:
	// at least the requests topic's retention plus the longest redrive.
	Events time.Duration
	// Webhooks is how long a provider event's row keeps absorbing its
	// redeliveries: Stripe retries for three days.
	Webhooks time.Duration
	// Redrives is how long a redriven dead letter is remembered: at least the
	// dead-letter topic's retention.
	Redrives time.Duration
	// Findings is how long the reconciler's findings are kept for `worker
	// reconcile report`.
	Findings time.Duration
	// Orders is how long a closed order, its payments and its refund requests
	// stay after its last change, and a kind's settled record after its own; 0
	// keeps them for ever, as the ledger of record.
	Orders time.Duration
}

// Minimums below which a retention would break what depends on it.
const (
	MinEvents   = 24 * time.Hour
	MinWebhooks = 72 * time.Hour // Stripe's retries
	MinRedrives = 24 * time.Hour
	MinOrders   = 180 * 24 * time.Hour // disputes open up to 120 days after a charge
)

// Defaults are the retentions unless configured.
var Defaults = Retentions{Events: 14 * 24 * time.Hour, Webhooks: 7 * 24 * time.Hour, Redrives: 30 * 24 * time.Hour,
	Findings: 90 * 24 * time.Hour}

// Validate names each retention below its minimum.
func (r Retentions) Validate() error {
	var errs []error
	check := func(name string, d, least time.Duration) {
		if d < least {
			errs = append(errs, fmt.Errorf("%s=%s: at least %s", name, d, least))
		}
	}
	check("EVENTS_RETENTION", r.Events, MinEvents)
	check("WEBHOOK_EVENTS_RETENTION", r.Webhooks, MinWebhooks)
	check("REDRIVES_RETENTION", r.Redrives, MinRedrives)
	check("FINDINGS_RETENTION", r.Findings, time.Hour)
	if r.Orders != 0 {
		check("ORDERS_RETENTION", r.Orders, MinOrders)
	}
	return errors.Join(errs...)
}

// closed lists the statuses an order may leave the ledger in: nothing in flight,
// no dispute open.
func closed() []string {
	var out []string
	for _, s := range order.Statuses {
		switch s {
		case order.StatusPending, order.StatusPaymentPending, order.StatusPaymentUnknown, order.StatusActionRequired, order.StatusDisputed:
		default:
			out = append(out, string(s))
		}
	}
	return out
}

// Rules are the tables' rules for the retentions.
func (r Retentions) Rules() []Rule {
	rules := []Rule{
		{Table: "idempotency_keys", Column: "expires_at"},
		{Table: "processed_events", Column: "processed_at", Keep: r.Events},
		{Table: "webhook_events", Column: "received_at", Keep: r.Webhooks},
		{Table: "dlq_redriven_letters", Column: "redriven_at", Keep: r.Redrives},
		{Table: "reconcile_findings", Column: "found_at", Keep: r.Findings},
		// A customer's dead letter is counted for an erasure while the letter can
		// still be in the dead-letter topic, as a redrive's record is.
		{Table: "customer_letters", Column: "created_at", Keep: r.Redrives},
	}
	if r.Orders > 0 {
		// Payments reference their order: both go in one statement, and the
		// order's refund requests with them. An order a refund request is still
		// refunding stays until it has ended.
		where := "status IN ('" + strings.Join(closed(), "', '") + "')"
		rules = append(rules, Rule{Table: "orders", Column: "updated_at", Keep: r.Orders, where: where, delete: `
			WITH doomed AS (
				SELECT id, tenant FROM orders o WHERE updated_at < $1 AND ` + where + `
				AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.tenant = o.tenant AND r.order_id = o.id AND r.status = 'PENDING')
				ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED),
			gone AS (DELETE FROM payments WHERE order_id IN (SELECT id FROM doomed)),
			refunds_gone AS (DELETE FROM refunds WHERE (tenant, order_id) IN (SELECT tenant, id FROM doomed))
			DELETE FROM orders WHERE id IN (SELECT id FROM doomed)`})
		// A kind's record goes as an order does: once its workflow has settled.
		rules = append(rules, Rule{Table: "kind_records", Column: "updated_at", Keep: r.Orders, where: "final", delete: `
			DELETE FROM kind_records WHERE ctid = ANY(ARRAY(
				SELECT ctid FROM kind_records WHERE updated_at < $1 AND final ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED))`})
	}
	return rules
}

func (rule Rule) deleteSQL() string {
	if rule.delete != "" {
		return rule.delete
	}
	return fmt.Sprintf(`DELETE FROM %[1]s WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM %[1]s WHERE %[2]s < $1 ORDER BY %[2]s LIMIT $2 FOR UPDATE SKIP LOCKED))`, rule.Table, rule.Column)
}

// Metrics are the pruner's series, by table.
type Metrics struct {
	Pruned   *prometheus.CounterVec
	Oldest   *prometheus.GaugeVec
	Overdue  *prometheus.GaugeVec
	LastPass prometheus.Gauge
}

// NewMetrics registers the series with reg, every table's at zero.
func NewMetrics(reg prometheus.Registerer, rules []Rule) Metrics {
	m := Metrics{
		Pruned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "orderflow_retention_pruned_rows_total",
			Help: "Rows deleted past their table's retention."}, []string{"table"}),
		Oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "orderflow_retention_oldest_row_age_seconds",
			Help: "Age of the table's oldest row by its retention column, at this process's last pass."}, []string{"table"}),
		Overdue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "orderflow_retention_overdue_seconds",
			Help: "How far past its retention the table's oldest row is, at this process's last pass: pruning falls behind when it grows."}, []string{"table"}),
		LastPass: prometheus.NewGauge(prometheus.GaugeOpts{Name: "orderflow_retention_last_pass_timestamp_seconds",
			Help: "When this process last finished a pruning pass as the leader."}),
	}
	for _, r := range rules {
		m.Pruned.WithLabelValues(r.Table)
		m.Overdue.WithLabelValues(r.Table)
	}
	reg.MustRegister(m.Pruned, m.Oldest, m.Overdue, m.LastPass)
	return m
}

// Pruner deletes the rows past their rules, in batches, as the fleet's one leader.
type Pruner struct {
	pool   *pgxpool.Pool
	rules  []Rule
	batch  int
	share  float64
	m      Metrics
	logger *slog.Logger
}

// Options shape a pass: Batch rows per statement, and Share, the part of a
// pass's time its statements may take. After a statement that took d, the pass
// waits d·(1−Share)/Share: when the database is busy its statements slow down
// and the pauses grow with them, so a backlog is pruned with what the
// database has to spare (PostgreSQL's cost-based vacuum delay works alike).
type Options struct {
	Batch int
	Share float64
}

// Paced is how the workers prune: statements of 2,000 rows (a few tens of
// milliseconds each) taking a quarter of a pass's time.
func Paced() Options { return Options{Batch: 2000, Share: 0.25} }

// NewPruner returns a pruner of the rules. A Share outside (0, 1) means no
// pauses (PauseAfter).
func NewPruner(pool *pgxpool.Pool, rules []Rule, opts Options, m Metrics, logger *slog.Logger) *Pruner {
	return &Pruner{pool: pool, rules: rules, batch: max(opts.Batch, 1), share: opts.Share, m: m, logger: logger}
}

// PauseAfter is the wait after a statement that took d, for a pass whose
// statements take share of its time.
func PauseAfter(d time.Duration, share float64) time.Duration {
	if share <= 0 || share >= 1 {
		return 0
	}
	return time.Duration(float64(d) * (1 - share) / share)
}

// leaderLock is the advisory lock key of the fleet's pruning leader.
const leaderLock = 0x6f72646572666c6f // "orderflo"

// Report is one pass: whether this process led it and what it deleted per table.
type Report struct {
	Leader bool
	Pruned map[string]int64
	Took   time.Duration
}

// Run prunes every interval, the first time one interval after it starts (the
// rest of the fleet prunes meanwhile), until ctx ends.
func (p *Pruner) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rep, err := p.Pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			p.logger.WarnContext(ctx, "retention pass", "err", err)
		case rep.Leader && total(rep.Pruned) > 0:
			p.logger.InfoContext(ctx, "retention pass", "pruned", rep.Pruned, "took", rep.Took.Round(time.Millisecond))
		}
	}
}

func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// Pass prunes every table once if no other process is pruning, and returns what
// it deleted. The lock is the session's: a leader that dies gives it up with its
// connection.
func (p *Pruner) Pass(ctx context.Context) (Report, error) {
	rep := Report{Pruned: map[string]int64{}}
	began := time.Now()
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return rep, fmt.Errorf("retention: %w", err)
	}
	defer conn.Release()
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(leaderLock)).Scan(&rep.Leader); err != nil {
		return rep, fmt.Errorf("retention: %w", err)
	}
	if !rep.Leader {
		// Every process reports the tables' ages, so the fleet's series are
		// current whichever process led last.
		var errs []error
		for _, r := range p.rules {
			errs = append(errs, p.observe(ctx, conn, r))
		}
		return rep, errors.Join(errs...)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(leaderLock)); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // the lock goes with the session
		}
	}()
	var errs []error
	for _, r := range p.rules {
		n, err := p.prune(ctx, conn, r)
		rep.Pruned[r.Table] = n
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := p.observe(ctx, conn, r); err != nil {
			errs = append(errs, err)
		}
	}
	rep.Took = time.Since(began)
	if len(errs) == 0 {
		p.m.LastPass.SetToCurrentTime()
	}
	return rep, errors.Join(errs...)
}

// prune deletes r's rows past its retention, a batch per statement, until a
// batch comes back short: however many expired since the last pass, one pass
// removes them. The cutoff is the database's clock, read once.
func (p *Pruner) prune(ctx context.Context, conn *pgxpool.Conn, r Rule) (int64, error) {
	var cutoff time.Time
	if err := conn.QueryRow(ctx, `SELECT now() - make_interval(secs => $1)`, r.Keep.Seconds()).Scan(&cutoff); err != nil {
		return 0, fmt.Errorf("retention of %s: %w", r.Table, err)
	}
	var n int64
	for {
		began := time.Now()
		tag, err := conn.Exec(ctx, r.deleteSQL(), cutoff, p.batch)
		took := time.Since(began)
		if err != nil {
			return n, fmt.Errorf("prune %s: %w", r.Table, err)
		}
		n += tag.RowsAffected()
		p.m.Pruned.WithLabelValues(r.Table).Add(float64(tag.RowsAffected()))
		if tag.RowsAffected() < int64(p.batch) {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(PauseAfter(took, p.share)):
		}
	}
}

// observe sets r's oldest-row age and how far it is past its retention, read from
// the indexed column's minimum.
func (p *Pruner) observe(ctx context.Context, conn *pgxpool.Conn, r Rule) error {
	var age float64
	where := r.where
	if where == "" {
		where = "true"
	}
	err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT COALESCE(extract(epoch FROM now() - min(%s)), 0)::float8 FROM %s WHERE %s`,
		r.Column, r.Table, where)).Scan(&age)
	if err != nil {
		return fmt.Errorf("oldest row of %s: %w", r.Table, err)
	}
	if r.Keep > 0 {
		p.m.Oldest.WithLabelValues(r.Table).Set(max(age, 0))
	}
	p.m.Overdue.WithLabelValues(r.Table).Set(max(age-r.Keep.Seconds(), 0))
	return nil
}
