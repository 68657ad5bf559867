package consumer

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the consumer's view of the tenants that exist.
type Store struct {
	pool  *pgxpool.Pool
	known sync.Map // tenant -> struct{}: tenants are not deleted, so a yes can be cached
}

// NewStore returns the store.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// TenantExists reports whether the tenant has an active API key.
func (s *Store) TenantExists(ctx context.Context, tenant string) (bool, error) {
	if _, ok := s.known.Load(tenant); ok {
		return true, nil
	}
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys WHERE tenant = $1 AND revoked_at IS NULL)`, tenant).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up tenant: %w", err)
	}
	if ok {
		s.known.Store(tenant, struct{}{})
	}
	return ok, nil
}
