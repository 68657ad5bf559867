package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the webhook_events table: which provider events were handled, and which
// one a process is handling now.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns the store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Claim records a delivery of the event and reports whether this process may
// handle it: the event is new, or its last claim expired without an outcome
// (the process handling it died). outcome is the recorded one once handled.
func (s *Store) Claim(ctx context.Context, eventID, eventType string, hold time.Duration) (claimed bool, outcome string, err error) {
	secs := hold.Seconds()
	err = s.pool.QueryRow(ctx, `
		INSERT INTO webhook_events (event_id, type, locked_until)
		VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (event_id) DO NOTHING
		RETURNING true`, eventID, eventType, secs).Scan(&claimed)
	if err == nil {
		return true, "", nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, "", fmt.Errorf("record webhook event %s: %w", eventID, err)
	}
	err = s.pool.QueryRow(ctx, `
		WITH old AS (SELECT outcome, locked_until FROM webhook_events WHERE event_id = $1 FOR UPDATE)
		UPDATE webhook_events w
		SET deliveries = w.deliveries + 1,
		    locked_until = CASE WHEN old.outcome IS NULL AND old.locked_until < now()
		                        THEN now() + make_interval(secs => $2) ELSE old.locked_until END
		FROM old WHERE w.event_id = $1
		RETURNING COALESCE(old.outcome, ''), old.outcome IS NULL AND old.locked_until < now()`,
		eventID, secs).Scan(&outcome, &claimed)
	if errors.Is(err, pgx.ErrNoRows) { // pruned between the two statements: new again
		return s.Claim(ctx, eventID, eventType, hold)
	}
	if err != nil {
		return false, "", fmt.Errorf("claim webhook event %s: %w", eventID, err)
	}
	return claimed, outcome, nil
}

// Finish records what handling the event did; a later delivery is a duplicate.
func (s *Store) Finish(ctx context.Context, eventID, intentID string, outcome Outcome) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE webhook_events SET outcome = $2, intent_id = NULLIF($3, ''), handled_at = now(), locked_until = NULL
		WHERE event_id = $1`, eventID, string(outcome), intentID)
	if err != nil {
		return fmt.Errorf("record webhook event %s handled: %w", eventID, err)
	}
	return nil
}

// Release gives up a claim that could not finish (the provider or Temporal did not
// answer), so the provider's next delivery handles the event at once.
func (s *Store) Release(ctx context.Context, eventID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE webhook_events SET locked_until = now() WHERE event_id = $1 AND outcome IS NULL`, eventID)
	if err != nil {
		return fmt.Errorf("release webhook event %s: %w", eventID, err)
	}
	return nil
}
