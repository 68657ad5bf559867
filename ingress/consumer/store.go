package consumer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the consumer's view of the tenants that exist. The tenant field of an
// event is a trust boundary: only tenants with an active API key are accepted, and
// a yes is trusted for ttl, so a tenant whose keys are all revoked is refused
// within that time.
type Store struct {
	pool  *pgxpool.Pool
	ttl   time.Duration
	mu    sync.Mutex
	known map[string]time.Time // tenant -> until when it is trusted
}

// NewStore returns the store.
func NewStore(pool *pgxpool.Pool, ttl time.Duration) *Store {
	return &Store{pool: pool, ttl: ttl, known: map[string]time.Time{}}
}

// TenantExists reports whether the tenant has an active API key.
func (s *Store) TenantExists(ctx context.Context, tenant string) (bool, error) {
	s.mu.Lock()
	until, hit := s.known[tenant]
	s.mu.Unlock()
	if hit && time.Now().Before(until) {
		return true, nil
	}
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys WHERE tenant = $1 AND revoked_at IS NULL)`, tenant).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up tenant: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		delete(s.known, tenant)
		return false, nil
	}
	if len(s.known) > 10000 {
		clear(s.known) // bounded
	}
	s.known[tenant] = time.Now().Add(s.ttl)
	return true, nil
}
