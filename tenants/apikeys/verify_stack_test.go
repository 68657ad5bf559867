//go:build stack

package apikeys_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// queries counts the statements a pool sends.
type queries struct{ n atomic.Int64 }

func (q *queries) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (*queries) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// 10,000 well-formed API keys nobody issued, sent at once with a real one: every
// made-up key is refused, the real one accepted, and Postgres sees at most a few
// queries a second.
func TestBogusKeysCostAFewQueriesASecond(t *testing.T) {
	stacktest.Pool(t) // migrated
	var q queries
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := database.Open(ctx, stacktest.Env(t)["DATABASE_URL"], 10, &q)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := apikeys.New(pool, apikeys.DefaultCacheTTL)
	tenant := stacktest.Name("tenant")
	real, err := store.Create(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	before := q.n.Load()
	began := time.Now()
	var wg sync.WaitGroup
	var accepted, refused, busy atomic.Int64
	for w := range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				got, err := store.Tenant(ctx, fmt.Sprintf("of_%06x%06x_bogussecret%d", w, i, i))
				switch {
				case errors.Is(err, apikeys.ErrUnauthorized):
					refused.Add(1)
				case errors.Is(err, apikeys.ErrBusy):
					busy.Add(1)
				default:
					t.Errorf("bogus key accepted: %q, %v", got, err)
				}
				if i%5 == 0 {
					if got, err := store.Tenant(ctx, real); err != nil || got != tenant {
						t.Errorf("real key: %q, %v", got, err)
					} else {
						accepted.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	n := q.n.Load() - before
	perSecond := float64(n) / max(took.Seconds(), 1)
	t.Logf("10,000 bogus keys in %v: %d refused, %d busy; %d real-key checks; %d queries (%.1f/s)", took, refused.Load(), busy.Load(), accepted.Load(), n, perSecond)
	if perSecond > 5 {
		t.Fatalf("%d queries in %v for 10,000 bogus keys: %.0f a second", n, took, perSecond)
	}
	// A wrong secret for the real key's id, and a bogus key sent again: refused
	// without a query.
	before = q.n.Load()
	if _, err := store.Tenant(ctx, real[:len(real)-1]+"x"); !errors.Is(err, apikeys.ErrUnauthorized) {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := store.Tenant(ctx, "of_000000000000_bogussecret0"); !errors.Is(err, apikeys.ErrUnauthorized) {
		t.Fatalf("bogus key again: %v", err)
	}
	if n := q.n.Load() - before; n != 0 {
		t.Fatalf("%d queries for keys already checked", n)
	}
}
