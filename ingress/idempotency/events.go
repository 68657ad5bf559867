package idempotency

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Events is the processed_events table: the Kafka ingress's dedup, per consumer
// group and tenant, which outlives Temporal's retention.
type Events struct {
	pool *pgxpool.Pool
}

// NewEvents returns the store.
func NewEvents(pool *pgxpool.Pool) *Events { return &Events{pool: pool} }

// Processed reports whether the group already turned the tenant's event into a
// workflow, and the fingerprint it was recorded with (nil for rows older than
// fingerprints).
func (s *Events) Processed(ctx context.Context, group, tenant, eventID string) (bool, []byte, error) {
	var fp []byte
	err := s.pool.QueryRow(ctx, `SELECT fingerprint FROM processed_events WHERE consumer_group = $1 AND tenant = $2 AND event_id = $3`,
		group, tenant, eventID).Scan(&fp)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("check processed event: %w", err)
	}
	return true, fp, nil
}

// MarkProcessed records the event's workflow and fingerprint; false if it was
// already recorded, with the fingerprint recorded then.
func (s *Events) MarkProcessed(ctx context.Context, group, tenant, eventID string, fingerprint []byte, workflowID string) (bool, []byte, error) {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO processed_events (consumer_group, tenant, event_id, workflow_id, fingerprint)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, group, tenant, eventID, workflowID, fingerprint)
	if err != nil {
		return false, nil, fmt.Errorf("record processed event: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return true, fingerprint, nil
	}
	_, stored, err := s.Processed(ctx, group, tenant, eventID)
	return false, stored, err
}
