package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Events is the processed_events table: the Kafka ingress's dedup, per consumer
// group and tenant, which outlives Temporal's retention. Concurrent MarkProcessed
// calls are written together: one INSERT per batch instead of one per event.
type Events struct {
	pool  *pgxpool.Pool
	mu    sync.Mutex
	queue []*mark
	busy  bool // a writer goroutine is draining the queue
}

// NewEvents returns the store.
func NewEvents(pool *pgxpool.Pool) *Events { return &Events{pool: pool} }

// Processed reports whether the group already turned the tenant's event into a
// workflow, and the fingerprint it was recorded with (nil for rows older than
// fingerprints). Past the event log's retention (EVENTS_RETENTION) what the
// event's workflow, workflowID, recorded answers instead when the kind's query
// recorded says (nil: not asked): a redelivery then is still that workflow,
// never a second one.
func (s *Events) Processed(ctx context.Context, group, tenant, eventID, workflowID string, recorded Query) (bool, []byte, error) {
	var fp []byte
	query := `SELECT fingerprint FROM processed_events WHERE consumer_group = $1 AND tenant = $2 AND event_id = $3`
	args := []any{group, tenant, eventID}
	if recorded != nil {
		query = `(` + query + `) UNION ALL (` + recorded("$2", "$4") + `) LIMIT 1`
		args = append(args, workflowID)
	}
	err := s.pool.QueryRow(ctx, query, args...).Scan(&fp)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("check processed event: %w", err)
	}
	return true, fp, nil
}

// Span counts the group's processed events of a tenant and the time from the
// first to the last, in seconds.
func (s *Events) Span(ctx context.Context, group, tenant string) (int, float64, error) {
	var n int
	var span float64
	err := s.pool.QueryRow(ctx, `SELECT count(*), COALESCE(extract(epoch FROM max(processed_at) - min(processed_at)), 0)
		FROM processed_events WHERE consumer_group = $1 AND tenant = $2`, group, tenant).Scan(&n, &span)
	if err != nil {
		return 0, 0, fmt.Errorf("count processed events: %w", err)
	}
	return n, span, nil
}

// mark is one MarkProcessed waiting for its batch.
type mark struct {
	group, tenant, eventID, workflowID string
	fingerprint                        []byte
	inserted                           bool
	err                                error
	done                               chan struct{}
}

// maxBatch bounds one INSERT.
const maxBatch = 256

// MarkProcessed records the event's workflow and fingerprint; false if it was
// already recorded, with the fingerprint recorded then. It returns once its row is
// committed: the caller commits the event's offset only after it.
func (s *Events) MarkProcessed(ctx context.Context, group, tenant, eventID string, fingerprint []byte, workflowID string) (bool, []byte, error) {
	m := &mark{group: group, tenant: tenant, eventID: eventID, workflowID: workflowID, fingerprint: fingerprint, done: make(chan struct{})}
	s.mu.Lock()
	s.queue = append(s.queue, m)
	start := !s.busy
	s.busy = true
	s.mu.Unlock()
	if start {
		go s.write()
	}
	select {
	case <-m.done:
	case <-ctx.Done():
		return false, nil, fmt.Errorf("record processed event: %w", ctx.Err())
	}
	if m.err != nil || m.inserted {
		return m.inserted, fingerprint, m.err
	}
	// The row is there (the insert conflicted): no kind's record is asked.
	_, stored, err := s.Processed(ctx, group, tenant, eventID, workflowID, nil)
	return false, stored, err
}

// write inserts what is queued, a batch per statement, until the queue is empty:
// rows queued while one INSERT runs go in the next one together.
func (s *Events) write() {
	for {
		s.mu.Lock()
		n := min(len(s.queue), maxBatch)
		if n == 0 {
			s.busy = false
			s.mu.Unlock()
			return
		}
		batch := s.queue[:n:n]
		s.queue = s.queue[n:]
		s.mu.Unlock()
		s.insert(batch)
	}
}

func (s *Events) insert(batch []*mark) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cols := make([][]string, 4)
	fps := make([][]byte, len(batch))
	for i, m := range batch {
		cols[0], cols[1] = append(cols[0], m.group), append(cols[1], m.tenant)
		cols[2], cols[3] = append(cols[2], m.eventID), append(cols[3], m.workflowID)
		fps[i] = m.fingerprint
	}
	rows, err := s.pool.Query(ctx, `
		INSERT INTO processed_events (consumer_group, tenant, event_id, workflow_id, fingerprint)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[])
		ON CONFLICT DO NOTHING
		RETURNING consumer_group, tenant, event_id`, cols[0], cols[1], cols[2], cols[3], fps)
	inserted := map[[3]string]bool{}
	if err == nil {
		for rows.Next() {
			var k [3]string
			if err = rows.Scan(&k[0], &k[1], &k[2]); err != nil {
				break
			}
			inserted[k] = true
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	for _, m := range batch {
		k := [3]string{m.group, m.tenant, m.eventID}
		if err != nil {
			m.err = fmt.Errorf("record processed event: %w", err)
		}
		m.inserted = inserted[k] // only the first of the batch with the key inserted it
		delete(inserted, k)
		close(m.done)
	}
}
