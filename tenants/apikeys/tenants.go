package apikeys

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// maxKnownTenants bounds the tenants cache: a flood of made-up tenant names cannot
// grow it, since only existing tenants are kept.
const maxKnownTenants = 10000

// Tenants tells which tenants exist: those with an active API key. The Kafka
// ingress asks it, since an event's tenant field is a trust boundary. A yes is
// trusted for ttl, so a tenant whose keys are all revoked is refused within that
// time.
type Tenants struct {
	pool  *pgxpool.Pool
	ttl   time.Duration
	mu    sync.Mutex
	known map[string]time.Time // tenant -> until when it is trusted
}

// NewTenants returns the tenants of the keys in pool.
func NewTenants(pool *pgxpool.Pool, ttl time.Duration) *Tenants {
	return &Tenants{pool: pool, ttl: ttl, known: map[string]time.Time{}}
}

// Exists reports whether the tenant has an active API key.
func (t *Tenants) Exists(ctx context.Context, tenant string) (bool, error) {
	t.mu.Lock()
	until, hit := t.known[tenant]
	t.mu.Unlock()
	if hit && time.Now().Before(until) {
		return true, nil
	}
	var ok bool
	err := t.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys WHERE tenant = $1 AND revoked_at IS NULL)`, tenant).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up tenant: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !ok {
		delete(t.known, tenant)
		return false, nil
	}
	if len(t.known) >= maxKnownTenants {
		clear(t.known)
	}
	t.known[tenant] = time.Now().Add(t.ttl)
	return true, nil
}
