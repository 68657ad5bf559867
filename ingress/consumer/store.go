package consumer

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the consumer's view of Postgres: processed_events (dedup that outlives
// Temporal's retention) and the tenants that exist.
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

// Processed reports whether the group already turned the event into a workflow.
func (s *Store) Processed(ctx context.Context, group, eventID string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM processed_events WHERE consumer_group = $1 AND event_id = $2)`, group, eventID).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check processed event: %w", err)
	}
	return ok, nil
}

// MarkProcessed records the event's workflow; false if it was already recorded.
func (s *Store) MarkProcessed(ctx context.Context, group, eventID, tenant, workflowID string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO processed_events (consumer_group, event_id, tenant, workflow_id)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, group, eventID, tenant, workflowID)
	if err != nil {
		return false, fmt.Errorf("record processed event: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
