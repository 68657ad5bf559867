//go:build stack

package retention_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/retention"
)

// A year's retentions, with orders kept 180 days.
var year = retention.Retentions{Events: 14 * 24 * time.Hour, Webhooks: 7 * 24 * time.Hour, Redrives: 30 * 24 * time.Hour,
	Findings: 90 * 24 * time.Hour, Orders: 180 * 24 * time.Hour}

func pruner(t *testing.T, rules []retention.Rule) (*retention.Pruner, retention.Metrics) {
	m := retention.NewMetrics(prometheus.NewRegistry(), rules)
	return retention.NewPruner(stacktest.Pool(t), rules, retention.Options{Batch: 1000}, m, slog.New(slog.NewTextHandler(io.Discard, nil))), m
}

// seed inserts n rows past their retention and 3 within it into every table the
// rules prune, for one tenant (or under names made for this test), and returns
// how to count what is left of each.
func seed(t *testing.T, n int) map[string]func() (old, recent int) {
	t.Helper()
	pool := stacktest.Pool(t)
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// Each table: rows i in [1, n] are old, (n, n+3] recent.
	exec(`INSERT INTO idempotency_keys (tenant, key, fingerprint, workflow_id, response_status, response_body, created_at, expires_at)
		SELECT $1, 'k' || i, '\x01'::bytea, 'wf', 202, '{}'::bytea, now() - interval '2 days',
		       CASE WHEN i <= $2 THEN now() - interval '1 second' ELSE now() + interval '1 hour' END
		FROM generate_series(1, $2 + 3) i`, tenant, n)
	exec(`INSERT INTO processed_events (consumer_group, tenant, event_id, workflow_id, processed_at)
		SELECT 'g', $1, 'e' || i, 'wf', CASE WHEN i <= $2 THEN now() - interval '15 days' ELSE now() - interval '13 days' END
		FROM generate_series(1, $2 + 3) i`, tenant, n)
	exec(`INSERT INTO webhook_events (event_id, type, received_at)
		SELECT $1 || '-' || i, 'payment_intent.succeeded', CASE WHEN i <= $2 THEN now() - interval '8 days' ELSE now() - interval '6 days' END
		FROM generate_series(1, $2 + 3) i`, tenant, n)
	exec(`INSERT INTO dlq_redriven_letters (letter, dlq_topic, dlq_partition, dlq_offset, event_id, redriven_at)
		SELECT convert_to($1 || '-' || i, 'UTF8'), $1, 0, i, 'e' || i,
		       CASE WHEN i <= $2 THEN now() - interval '31 days' ELSE now() - interval '29 days' END
		FROM generate_series(1, $2 + 3) i`, tenant, n)
	// Acknowledged, as old findings are: open, they would be the oldest an
	// operator's console lists, and push out those of the tests beside this one.
	exec(`INSERT INTO reconcile_findings (kind, action, tenant, provider_id, found_at, acknowledged_at, acknowledged_by)
		SELECT 'charge_without_order', 'reported', $1, $1 || '-' || i, f, f, 'retention test'
		FROM generate_series(1, $2 + 3) i,
		     LATERAL (SELECT CASE WHEN i <= $2 THEN now() - interval '91 days' ELSE now() - interval '89 days' END) AS at(f)`, tenant, n)
	exec(`INSERT INTO customer_letters (tenant, customer_hash, topic, event_id, key_id, created_at)
		SELECT $1, '\x01'::bytea, 'dlq', 'e' || i, 'ck_' || md5(i::text),
		       CASE WHEN i <= $2 THEN now() - interval '31 days' ELSE now() - interval '29 days' END
		FROM generate_series(1, $2 + 3) i`, tenant, n)
	count := func(sql string) func() (int, int) {
		return func() (old, recent int) {
			if err := pool.QueryRow(ctx, sql, tenant, n).Scan(&old, &recent); err != nil {
				t.Fatal(err)
			}
			return old, recent
		}
	}
	split := func(table, id, where string) func() (int, int) {
		return count(`SELECT count(*) FILTER (WHERE substring(` + id + ` from '[0-9]+$')::int <= $2),
			count(*) FILTER (WHERE substring(` + id + ` from '[0-9]+$')::int > $2) FROM ` + table + ` WHERE ` + where)
	}
	return map[string]func() (int, int){
		"idempotency_keys":     split("idempotency_keys", "key", "tenant = $1"),
		"processed_events":     split("processed_events", "event_id", "tenant = $1"),
		"webhook_events":       split("webhook_events", "event_id", "event_id LIKE $1 || '-%'"),
		"dlq_redriven_letters": split("dlq_redriven_letters", "event_id", "dlq_topic = $1"),
		"reconcile_findings":   split("reconcile_findings", "provider_id", "tenant = $1"),
		"customer_letters":     split("customer_letters", "event_id", "tenant = $1"),
	}
}

// One pass removes every row past its table's retention, however many, and
// keeps every row within it. While another process holds the leader's lock, a
// pass prunes nothing; of four passes at once, each row goes once.
func TestAPassPrunesEveryTableAndOneProcessLeads(t *testing.T) {
	const n = 5000
	ctx := context.Background()
	// Another process leads: nothing goes. The lock is taken before the rows are
	// seeded, so that the workers other rows start on the shared stack, which
	// prune every minute, cannot take them meanwhile.
	pool := stacktest.Pool(t)
	held, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(held.Release)
	defer release() // the pool's Close waits for it: a failure here must not hang
	if _, err := held.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(0x6f72646572666c6f)); err != nil {
		t.Fatal(err)
	}
	left := seed(t, n)
	rules := year.Rules()
	p, m := pruner(t, rules)
	rep, err := p.Pass(ctx)
	if err != nil || rep.Leader {
		t.Fatalf("a pass while another leads: %+v, %v", rep, err)
	}
	for table, count := range left {
		if old, _ := count(); old != n {
			t.Fatalf("%s: %d of %d old rows left while another process leads", table, old, n)
		}
	}
	// Four at once: whichever leads prunes; the others wait for the next pass.
	// They are ready before the lock goes, so that a worker of the shared stack
	// has the least time to lead first.
	var wg sync.WaitGroup
	var mu sync.Mutex
	leaders := 0
	others := make([]*retention.Pruner, 4)
	ms := make([]retention.Metrics, 4)
	for i := range others {
		others[i], ms[i] = pruner(t, rules)
	}
	others[0], ms[0] = p, m
	if _, err := held.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(0x6f72646572666c6f)); err != nil {
		t.Fatal(err)
	}
	release()
	for _, q := range others {
		wg.Go(func() {
			rep, err := q.Pass(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			if rep.Leader {
				leaders++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if leaders < 1 {
		t.Fatal("no pass led")
	}
	for table, count := range left {
		old, recent := count()
		if old != 0 || recent != 3 {
			t.Errorf("%s: %d old rows left (want 0), %d recent (want 3)", table, old, recent)
		}
		var pruned float64
		for _, m := range ms {
			pruned += testutil.ToFloat64(m.Pruned.WithLabelValues(table))
		}
		if pruned < n {
			t.Errorf("%s: pruned_rows_total %v over the passes, want at least %d", table, pruned, n)
		}
	}
}

// Orders leave the ledger only when ORDERS_RETENTION is set, only closed ones
// (nothing in flight, no dispute open, no refund request being refunded), with
// their payments and refund requests, and never before their retention.
func TestOnlyClosedOrdersPastTheirRetentionLeaveWithTheirPayments(t *testing.T) {
	pool := stacktest.Pool(t)
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	orders := []struct {
		status string
		age    string
		goes   bool
	}{
		{"PAID", "181 days", true}, {"CANCELLED", "200 days", true}, {"REFUNDED", "181 days", true},
		{"PAYMENT_DECLINED", "400 days", true}, {"PARTIALLY_REFUNDED", "181 days", true},
		{"PAID", "179 days", false}, {"PENDING", "400 days", false}, {"PAYMENT_PENDING", "400 days", false},
		{"PAYMENT_UNKNOWN", "400 days", false}, {"PAYMENT_ACTION_REQUIRED", "400 days", false}, {"DISPUTED", "400 days", false},
		{"PARTIALLY_REFUNDED", "181 days", false}, // a refund request refunds it yet
	}
	for i, o := range orders {
		id := tenant + "-" + string(rune('a'+i))
		if _, err := pool.Exec(ctx, `
			INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status, created_at, updated_at)
			VALUES ($1, $2, $1, 'cus_1', '[]', 500, 'USD', $3, now() - $4::interval, now() - $4::interval)`, id, tenant, o.status, o.age); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO payments (idempotency_key, order_id, kind, amount, currency, status)
			VALUES ($1 || ':charge', $1, 'charge', 500, 'USD', 'succeeded')`, id); err != nil {
			t.Fatal(err)
		}
		status := "SUCCEEDED"
		if i == len(orders)-1 {
			status = "PENDING"
		}
		if _, err := pool.Exec(ctx, `INSERT INTO refunds (id, tenant, workflow_id, order_id, amount_requested, amount, status)
			VALUES ($1 || ':refund', $2, $1 || ':refund', $1, 100, 100, $3)`, id, tenant, status); err != nil {
			t.Fatal(err)
		}
	}
	left := func() (int, int) {
		var o, p, r int
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders WHERE tenant = $1),
			(SELECT count(*) FROM payments WHERE order_id LIKE $1 || '-%'), (SELECT count(*) FROM refunds WHERE tenant = $1)`,
			tenant).Scan(&o, &p, &r); err != nil {
			t.Fatal(err)
		}
		if r != p {
			t.Errorf("%d refund requests left with %d payments: one outlived its order or went without it", r, p)
		}
		return o, p
	}

	kept := year
	kept.Orders = 0
	p, _ := pruner(t, kept.Rules())
	if _, err := p.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if o, pay := left(); o != len(orders) || pay != len(orders) {
		t.Fatalf("with orders kept for ever: %d orders and %d payments left of %d", o, pay, len(orders))
	}

	p, _ = pruner(t, year.Rules())
	if _, err := p.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for i, o := range orders {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE id = $1`, tenant+"-"+string(rune('a'+i))).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if (n == 0) != o.goes {
			t.Errorf("%s order %s old: left %d, want it gone %v", o.status, o.age, n, o.goes)
		}
	}
	if o, pay := left(); o != pay {
		t.Errorf("%d orders left with %d payments: a payment outlived its order or went without it", o, pay)
	}
}

// A kind's record past the orders' retention goes once its workflow has settled:
// a settled one within it stays, and so does an old one still moving.
func TestOnlySettledKindRecordsPastTheirRetentionLeave(t *testing.T) {
	pool := stacktest.Pool(t)
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	if _, err := pool.Exec(ctx, `INSERT INTO kind_records (tenant, kind, id, workflow_id, status, final, fingerprint, body, updated_at)
		SELECT $1, 'shipment', v.id, 'shipment:' || $1 || ':' || v.id, 'S', v.final, '\x01'::bytea, '{}'::jsonb, now() - v.age
		FROM (VALUES ('old-settled', true, interval '181 days'), ('recent-settled', true, interval '179 days'),
		             ('old-moving', false, interval '400 days')) AS v(id, final, age)`, tenant); err != nil {
		t.Fatal(err)
	}
	// kind_records' rule alone: a pass of every rule would prune what other
	// packages' tests keep on the shared stack (an old finding, say).
	var rules []retention.Rule
	for _, r := range year.Rules() {
		if r.Table == "kind_records" {
			rules = append(rules, r)
		}
	}
	p, _ := pruner(t, rules)
	if _, err := p.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT id FROM kind_records WHERE tenant = $1 ORDER BY id`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(left) != 2 || left[0] != "old-moving" || left[1] != "recent-settled" {
		t.Fatalf("left %v, %v; want old-moving and recent-settled", left, err)
	}
}
