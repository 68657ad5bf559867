package consumer

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Redrives is the dlq_redrives table: the dead letters a redrive re-published.
type Redrives struct{ pool *pgxpool.Pool }

// NewRedrives returns the store.
func NewRedrives(pool *pgxpool.Pool) *Redrives { return &Redrives{pool: pool} }

// Done reports whether the dead letter at topic/partition@offset was redriven.
func (r *Redrives) Done(ctx context.Context, topic string, partition int, offset int64) (bool, error) {
	var done bool
	err := r.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM dlq_redrives WHERE dlq_topic = $1 AND dlq_partition = $2 AND dlq_offset = $3)`,
		topic, partition, offset).Scan(&done)
	if err != nil {
		return false, fmt.Errorf("check redrive of %s/%d@%d: %w", topic, partition, offset, err)
	}
	return done, nil
}

// Record marks the dead letter as redriven.
func (r *Redrives) Record(ctx context.Context, topic string, partition int, offset int64, eventID string) error {
	_, err := r.pool.Exec(ctx, `INSERT INTO dlq_redrives (dlq_topic, dlq_partition, dlq_offset, event_id) VALUES ($1, $2, $3, $4)
		ON CONFLICT DO NOTHING`, topic, partition, offset, eventID)
	if err != nil {
		return fmt.Errorf("record redrive of %s/%d@%d: %w", topic, partition, offset, err)
	}
	return nil
}
