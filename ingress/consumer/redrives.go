package consumer

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/segmentio/kafka-go"
)

// Redrives is the dlq_redriven_letters table: the dead letters a redrive
// re-published, by their letter identity (letterOf).
type Redrives struct{ pool *pgxpool.Pool }

// NewRedrives returns the store.
func NewRedrives(pool *pgxpool.Pool) *Redrives { return &Redrives{pool: pool} }

// Done reports whether the letter was redriven.
func (r *Redrives) Done(ctx context.Context, letter []byte) (bool, error) {
	var done bool
	err := r.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM dlq_redriven_letters WHERE letter = $1)`, letter).Scan(&done)
	if err != nil {
		return false, fmt.Errorf("check redrive of letter %x: %w", letter[:8], err)
	}
	return done, nil
}

// Record marks the letter, read at m's place in the dead-letter topic, as redriven.
func (r *Redrives) Record(ctx context.Context, letter []byte, m kafka.Message, eventID string) error {
	_, err := r.pool.Exec(ctx, `INSERT INTO dlq_redriven_letters (letter, dlq_topic, dlq_partition, dlq_offset, event_id)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, letter, m.Topic, m.Partition, m.Offset, eventID)
	if err != nil {
		return fmt.Errorf("record redrive of %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
	}
	return nil
}

// Purge marks the letter, read at m's place in the dead-letter topic, as
// discarded by by: no redrive sends it. A letter redriven before stays so.
func (r *Redrives) Purge(ctx context.Context, letter []byte, m kafka.Message, eventID, by string) error {
	_, err := r.pool.Exec(ctx, `INSERT INTO dlq_redriven_letters (letter, dlq_topic, dlq_partition, dlq_offset, event_id, purged_by)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, letter, m.Topic, m.Partition, m.Offset, eventID, by)
	if err != nil {
		return fmt.Errorf("record purge of %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
	}
	return nil
}

// letterOf identifies a dead letter by what it holds, not where it sits: a
// SHA-256 of its provenance headers (original topic, partition, offset, consumer
// group) and of the original value. The same poison message dead-lettered twice
// (a crash before its commit) is one letter; a letter at an offset a recreated
// dead-letter topic reuses is another.
func letterOf(dl kafka.Message, value []byte) []byte {
	h := sha256.New()
	for _, k := range []string{HeaderTopic, HeaderPartition, HeaderOffset, HeaderGroup} {
		v, _ := header(dl.Headers, k)
		fmt.Fprintf(h, "%d:%s;", len(v), v)
	}
	sum := sha256.Sum256(value)
	h.Write([]byte(strconv.Itoa(len(sum)) + ":"))
	h.Write(sum[:])
	return h.Sum(nil)
}
