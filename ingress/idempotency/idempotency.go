// Package idempotency keeps the ingresses' dedup records in Postgres. HTTP: one row per
// (tenant, Idempotency-Key) holding the request's fingerprint, its workflow and the
// response given, kept for a TTL that outlives the workflow's retention in Temporal.
// Kafka: one row per (consumer group, eventId) in processed_events (events.go).
package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Outcome is what a keyed request came to, on either ingress. Claim answers
// Claimed, Replayed, Mismatch or InFlight; the intake turns Claimed into Created,
// or any step into Unavailable.
type Outcome int

const (
	// Claimed: the caller owns the key and must Complete or Unlock it.
	Claimed Outcome = iota
	// Created: the order's workflow was started by this request.
	Created
	// Replayed: the key already made its order; HTTP sends its response again.
	Replayed
	// Mismatch: the key was used with a different request.
	Mismatch
	// InFlight: another request with the key is being handled.
	InFlight
	// Unavailable: a dependency failed; retry with the same key.
	Unavailable
	// Refused: the request's kind cannot take it now (a problem says why); nothing
	// started.
	Refused
)

// Print is a request's fingerprint: the value to store with a new key, and how to
// tell whether a stored one (of any fingerprint version) is the same request.
type Print struct {
	Value   []byte
	Matches func(stored []byte) bool
	// Recorded, when set, is the SQL query of the fingerprint the key's workflow
	// recorded in its kind's read model (ingress.Ledgered): a claim asks it in
	// its own statement. Nil: not asked.
	Recorded Query
}

// Query is a kind's SQL query of the fingerprint of the request a workflow
// recorded (ingress.Ledgered's FingerprintQuery), over the SQL expressions of a
// tenant and a workflow ID.
type Query func(tenant, workflowID string) string

// recordedForKey is the SQL condition that the workflow of a key's row, aliased
// k, recorded its request: Postgres keeps a kind's records longer than keys, so a
// key can be new to its workflow. The kind writes the query; the claim asks it in
// its own statement, saving a round trip on every POST.
func recordedForKey(q Query) string {
	if q == nil {
		return "false"
	}
	return "EXISTS (" + q("k.tenant", "k.workflow_id") + ")"
}

// Record is a stored response.
type Record struct {
	WorkflowID string
	Status     int
	Body       []byte
	// RetryAfter is how long until an in-flight claim expires.
	RetryAfter time.Duration
	// Recorded (Claimed only, when the Print asks): the kind's read model
	// already has the workflow's request, made under an earlier record of the
	// key that has since expired.
	Recorded bool
	// Expires is when the record expires (Claimed and Replayed), by this
	// process's clock: after it the key is pruned, and a request with it is
	// judged by the order it made (intake).
	Expires time.Time
}

// Store is the idempotency_keys table.
type Store struct {
	pool    *pgxpool.Pool
	ttl     time.Duration
	replays *replays
}

// New returns a store whose records expire after ttl, replaying completed ones
// from a cache of at most cacheBytes.
func New(pool *pgxpool.Pool, ttl time.Duration, cacheBytes int) *Store {
	return &Store{pool: pool, ttl: ttl, replays: newReplays(cacheBytes, replayLifetime, time.Now)}
}

// Claim takes the key for one request for at most lease. A claim whose lease ran out
// (its request died: the process was killed) is taken over, which is safe because
// the workflow start it guards is itself idempotent. Expired records are reclaimed.
// A new key costs one statement, which also says whether the workflow's request
// is already recorded (Print.Recorded); a repeated key costs one read, or none when its response is in
// the process's cache (replays.go). No transaction is held across round trips.
func (s *Store) Claim(ctx context.Context, tenant, key string, fp Print, workflowID string, lease time.Duration) (Outcome, Record, error) {
	if e, ok := s.replays.get(tenant, key); ok {
		if !fp.Matches(e.fingerprint) {
			return Mismatch, e.Record, nil
		}
		return Replayed, e.Record, nil
	}
	recorded := recordedForKey(fp.Recorded)
	cur, claimed, err := s.insert(ctx, tenant, key, fp.Value, workflowID, lease, recorded)
	switch {
	case err != nil:
		return 0, Record{}, err
	case claimed:
		cur.Expires = time.Now().Add(s.ttl)
		return Claimed, cur.Record, nil
	case cur.expired:
		cur, claimed, err = s.reclaim(ctx, tenant, key, fp.Value, workflowID, lease, recorded)
		if err != nil {
			return 0, Record{}, err
		}
		if claimed {
			cur.Expires = time.Now().Add(s.ttl)
			return Claimed, cur.Record, nil
		}
	}
	if !cur.found {
		// Another request created the record after this statement's snapshot, or
		// reclaimed it in between: judge by it.
		if cur, err = s.read(ctx, tenant, key); err != nil {
			return 0, Record{}, fmt.Errorf("claim idempotency key: %w", err)
		}
		if !cur.found {
			return 0, Record{}, errors.New("claim idempotency key: record vanished")
		}
	}
	cur.Expires = expiresIn(cur.left)
	switch {
	case !fp.Matches(cur.fingerprint):
		return Mismatch, cur.Record, nil
	case cur.status != nil:
		cur.Status = *cur.status
		if cur.left >= replayMinLeft.Seconds() {
			s.replays.put(tenant, key, cur.Record, cur.fingerprint)
		}
		return Replayed, cur.Record, nil
	case cur.lockedFor != nil:
		cur.RetryAfter = time.Duration(*cur.lockedFor * float64(time.Second))
		return InFlight, cur.Record, nil
	}
	// The lease ran out without a response: take it over, unless another request
	// just did.
	err = s.pool.QueryRow(ctx, `
		UPDATE idempotency_keys k SET locked_until = now() + $3 * interval '1 millisecond'
		WHERE tenant = $1 AND key = $2 AND response_status IS NULL AND (locked_until IS NULL OR locked_until <= now())
		RETURNING `+recorded, tenant, key, lease.Milliseconds()).Scan(&cur.Recorded)
	if errors.Is(err, pgx.ErrNoRows) {
		cur.RetryAfter = time.Second
		return InFlight, cur.Record, nil
	}
	if err != nil {
		return 0, Record{}, fmt.Errorf("take over idempotency key: %w", err)
	}
	return Claimed, cur.Record, nil
}

// insert claims a key that has no record, or returns the record the statement's
// snapshot holds (not found when a concurrent insert made it).
func (s *Store) insert(ctx context.Context, tenant, key string, fingerprint []byte, workflowID string, lease time.Duration, recorded string) (current, bool, error) {
	var c current
	var claimed bool
	err := s.pool.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO idempotency_keys AS k (tenant, key, fingerprint, workflow_id, locked_until, expires_at)
			VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond', now() + $6 * interval '1 millisecond')
			ON CONFLICT (tenant, key) DO NOTHING
			RETURNING `+recorded+` AS recorded)
		SELECT EXISTS (SELECT 1 FROM ins), COALESCE((SELECT recorded FROM ins), false), k.tenant IS NOT NULL, `+readColumns+`
		FROM (SELECT 1) one LEFT JOIN idempotency_keys k ON k.tenant = $1 AND k.key = $2`,
		tenant, key, fingerprint, workflowID, lease.Milliseconds(), s.ttl.Milliseconds()).Scan(
		&claimed, &c.Recorded, &c.found, &c.fingerprint, &c.WorkflowID, &c.status, &c.Body, &c.lockedFor, &c.left)
	if err != nil {
		return c, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	if claimed {
		c.WorkflowID = workflowID
	}
	c.expired = c.found && c.left < 0
	return c, claimed, nil
}

// reclaim rewrites an expired record for a new request.
func (s *Store) reclaim(ctx context.Context, tenant, key string, fingerprint []byte, workflowID string, lease time.Duration, recorded string) (current, bool, error) {
	c := current{Record: Record{WorkflowID: workflowID}}
	err := s.pool.QueryRow(ctx, `
		INSERT INTO idempotency_keys AS k (tenant, key, fingerprint, workflow_id, locked_until, expires_at)
		VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond', now() + $6 * interval '1 millisecond')
		ON CONFLICT (tenant, key) DO UPDATE
		SET fingerprint = EXCLUDED.fingerprint, workflow_id = EXCLUDED.workflow_id,
		    response_status = NULL, response_body = NULL, locked_until = EXCLUDED.locked_until,
		    created_at = now(), expires_at = EXCLUDED.expires_at
		WHERE k.expires_at < now()
		RETURNING `+recorded,
		tenant, key, fingerprint, workflowID, lease.Milliseconds(), s.ttl.Milliseconds()).Scan(&c.Recorded)
	if errors.Is(err, pgx.ErrNoRows) {
		return current{}, false, nil // another request reclaimed it first
	}
	if err != nil {
		return c, false, fmt.Errorf("reclaim idempotency key: %w", err)
	}
	return c, true, nil
}

type current struct {
	Record
	found       bool
	fingerprint []byte
	status      *int
	lockedFor   *float64 // seconds left of a live lease
	left        float64  // seconds until the record expires
	expired     bool
}

const readColumns = `k.fingerprint, COALESCE(k.workflow_id, ''), k.response_status, k.response_body,
	CASE WHEN k.locked_until > now() THEN extract(epoch FROM k.locked_until - now())::float8 END,
	COALESCE(extract(epoch FROM k.expires_at - now())::float8, 0)`

func (s *Store) read(ctx context.Context, tenant, key string) (current, error) {
	c := current{found: true}
	err := s.pool.QueryRow(ctx, `SELECT `+readColumns+` FROM idempotency_keys k WHERE tenant = $1 AND key = $2`,
		tenant, key).Scan(&c.fingerprint, &c.WorkflowID, &c.status, &c.Body, &c.lockedFor, &c.left)
	if errors.Is(err, pgx.ErrNoRows) {
		return current{}, nil
	}
	if err != nil {
		return c, fmt.Errorf("read idempotency key: %w", err)
	}
	c.expired = c.left < 0
	return c, nil
}

// Lookup returns the workflow a key was claimed for, expired or not.
func (s *Store) Lookup(ctx context.Context, tenant, key string) (string, bool, error) {
	cur, err := s.read(ctx, tenant, key)
	return cur.WorkflowID, cur.found, err
}

// Holds tells whether the tenant's key has a record that has not expired: a
// request with it is answered from the record, or takes over the claim of a
// request that died, and is never new work. A completed record in the
// process's cache costs no round trip.
func (s *Store) Holds(ctx context.Context, tenant, key string) (bool, error) {
	if _, ok := s.replays.get(tenant, key); ok {
		return true, nil
	}
	cur, err := s.read(ctx, tenant, key)
	return cur.found && !cur.expired, err
}

// Complete stores the response of a claimed key. A non-nil fingerprint replaces the
// claim's: the key is bound to the request that made the order it answers with.
func (s *Store) Complete(ctx context.Context, tenant, key string, fingerprint []byte, status int, body []byte) error {
	rec := Record{Status: status, Body: body}
	var stored []byte
	var left float64
	err := s.pool.QueryRow(ctx, `
		UPDATE idempotency_keys SET response_status = $3, response_body = $4, locked_until = NULL,
		       fingerprint = COALESCE($5, fingerprint)
		WHERE tenant = $1 AND key = $2
		RETURNING workflow_id, fingerprint, extract(epoch FROM expires_at - now())::float8`,
		tenant, key, status, body, fingerprint).Scan(&rec.WorkflowID, &stored, &left)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // nothing to answer: a retry claims the key again
	}
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	rec.Expires = expiresIn(left)
	if left >= replayMinLeft.Seconds() {
		s.replays.put(tenant, key, rec, stored)
	}
	return nil
}

// Unlock gives up a claim without a response: a retry takes the key over at once.
// The record and its fingerprint stay, since a workflow may have started for this
// request: a retry with another body is still refused.
func (s *Store) Unlock(ctx context.Context, tenant, key string) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET locked_until = NULL WHERE tenant = $1 AND key = $2 AND response_status IS NULL`, tenant, key)
	if err != nil {
		return fmt.Errorf("unlock idempotency key: %w", err)
	}
	return nil
}

// expiresIn is when a record with left seconds to live (Postgres's count) expires,
// by this process's clock.
func expiresIn(left float64) time.Time {
	return time.Now().Add(time.Duration(left * float64(time.Second)))
}
