//go:build stack

package database_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/migrations"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// The newest migration is applied while old pods serve: on a database one
// migration behind, with a table of orders, requests record orders, move them and
// claim keys while the migration runs, and none of them waits on a lock longer than
// a change of metadata takes.
func TestNewestMigrationUnderLoadTakesNoLockRequestsWaitOn(t *testing.T) {
	env := stacktest.Env(t)
	ctx := context.Background()
	versions := migrationVersions(t)
	newest := versions[len(versions)-1]

	dsn := freshDatabase(t, env["DATABASE_URL"])
	setup := openPool(t, dsn, "migration-setup")
	provider := gooseProvider(t, setup)
	if _, err := provider.UpTo(ctx, versions[len(versions)-2]); err != nil {
		t.Fatalf("migrate to the version before %d: %v", newest, err)
	}
	// Enough orders that building an index over them takes a while.
	if _, err := setup.Exec(ctx, `
		INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status)
		SELECT 'ord_' || i, 'preload', 'wf-' || i, 'cus', '[]', 100, 'USD',
		       (ARRAY['PAID', 'PAYMENT_PENDING', 'FAILED'])[1 + i % 3]
		FROM generate_series(1, 400000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Exec(ctx, `ANALYZE orders`); err != nil {
		t.Fatal(err)
	}

	load := openPool(t, dsn, "migration-load")
	stop := make(chan struct{})
	var ops atomic.Int64
	var loadErr atomic.Value
	var wg sync.WaitGroup
	keys := idempotency.New(load, time.Hour, 0)
	for w := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := request(ctx, load, keys, fmt.Sprintf("k-%d-%d", w, i)); err != nil {
					loadErr.Store(err)
					return
				}
				ops.Add(1)
			}
		})
	}

	// Every 2 ms: the load's statements waiting on a lock, and for how long.
	var waits int
	var longest time.Duration
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			var n int
			var secs float64
			err := setup.QueryRow(ctx, `
				SELECT count(*), COALESCE(max(extract(epoch FROM clock_timestamp() - query_start)), 0)
				FROM pg_stat_activity WHERE application_name = 'migration-load' AND wait_event_type = 'Lock'`).Scan(&n, &secs)
			if err == nil && n > 0 {
				waits += n
				longest = max(longest, time.Duration(secs*float64(time.Second)))
			}
		}
	}()

	time.Sleep(200 * time.Millisecond) // the load runs before the migration starts
	before := ops.Load()
	began := time.Now()
	err := database.MigrateURL(ctx, dsn, stacktest.Logger(t))
	took := time.Since(began)
	during := ops.Load() - before
	close(stop)
	wg.Wait()
	<-sampled
	if err != nil {
		t.Fatalf("migrate to %d: %v", newest, err)
	}
	if e := loadErr.Load(); e != nil {
		t.Fatalf("a request failed: %v", e)
	}
	t.Logf("migration %d took %s over 400,000 orders; %d requests ran meanwhile; longest lock wait seen: %s (%d samples waiting)",
		newest, took.Round(time.Millisecond), during, longest.Round(time.Millisecond), waits)
	if during == 0 {
		t.Fatal("no request ran during the migration")
	}
	if longest > maxLockWait {
		t.Fatalf("requests waited on a lock during the migration: %d samples, the longest %s", waits, longest)
	}
}

// maxLockWait bounds a request's wait on a migration's lock: a change of metadata
// taken with a short lock timeout, never a scan or a rewrite (the old 00006's
// index built in place held requests 142 ms).
const maxLockWait = 50 * time.Millisecond

// request is what an old pod's POST and workflow do to the hot tables, in the
// statements of the release before the newest migration (the current store's may
// name columns it adds): a key claimed, an order recorded, read and moved.
func request(ctx context.Context, pool *pgxpool.Pool, keys *idempotency.Store, key string) error {
	wf := order.WorkflowID("load", order.FromHTTP, key)
	fp := idempotency.Print{Value: []byte(key), Matches: func([]byte) bool { return true }}
	if _, _, err := keys.Claim(ctx, "load", key, fp, wf, time.Minute); err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	id := order.IDFor(wf)
	if _, err := pool.Exec(ctx, `
		INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status)
		VALUES ($1, 'load', $2, 'cus', '[{"sku":"s","quantity":1,"unit_amount":100}]', 100, 'USD', 'PENDING')
		ON CONFLICT DO NOTHING`, id, wf); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	var status string
	if err := pool.QueryRow(ctx, `SELECT status FROM orders WHERE tenant = 'load' AND id = $1`, id).Scan(&status); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE orders SET status = 'PAYMENT_PENDING', updated_at = now() WHERE id = $1 AND status = ANY($2)`,
		id, order.Sources(order.StatusPaymentPending)); err != nil {
		return fmt.Errorf("move: %w", err)
	}
	return nil
}

func migrationVersions(t *testing.T) []int64 {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var vs []int64
	for _, f := range files {
		v, err := strconv.ParseInt(strings.SplitN(f, "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs
}

// freshDatabase creates an empty database beside the stack's, dropped after the
// test, and returns its URL.
func freshDatabase(t *testing.T, stackURL string) string {
	t.Helper()
	ctx := context.Background()
	admin := openPool(t, stackURL, "migration-admin")
	name := strings.ReplaceAll(stacktest.Name("migrate"), "-", "_")
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`) })
	u, err := url.Parse(stackURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func openPool(t *testing.T, dsn, app string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func gooseProvider(t *testing.T, pool *pgxpool.Pool) *goose.Provider {
	t.Helper()
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
