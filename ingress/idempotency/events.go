package idempotency

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Events is the processed_events table: the Kafka ingress's dedup, which outlives
// Temporal's retention.
type Events struct {
	pool *pgxpool.Pool
}

// NewEvents returns the store.
func NewEvents(pool *pgxpool.Pool) *Events { return &Events{pool: pool} }

// Processed reports whether the group already turned the event into a workflow.
func (s *Events) Processed(ctx context.Context, group, eventID string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM processed_events WHERE consumer_group = $1 AND event_id = $2)`, group, eventID).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check processed event: %w", err)
	}
	return ok, nil
}

// MarkProcessed records the event's workflow; false if it was already recorded.
func (s *Events) MarkProcessed(ctx context.Context, group, eventID, tenant, workflowID string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO processed_events (consumer_group, event_id, tenant, workflow_id)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, group, eventID, tenant, workflowID)
	if err != nil {
		return false, fmt.Errorf("record processed event: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
