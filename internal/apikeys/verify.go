package apikeys

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Bounds of the verifier: what an unauthenticated caller can make it do.
const (
	// lookupInterval spaces the Postgres lookups of keys not yet known: every
	// request for an unknown key in that time shares one query, so a flood of
	// made-up keys costs Postgres at most a few queries a second.
	lookupInterval = 250 * time.Millisecond
	// maxLookupIDs bounds one query; more keys waiting are refused as busy.
	maxLookupIDs = 1000
	// maxKnown bounds each cache (found keys, absent ids): past it, that cache
	// starts over, so a flood of absent ids never evicts the keys in use.
	maxKnown = 10000
)

// ErrBusy is a key that could not be checked because too many unknown keys are
// waiting for their lookup: the caller may retry.
var ErrBusy = errors.New("too many API keys waiting to be checked")

// row is what Postgres said of a key id: its tenant and hash, or that there is no
// active key with it.
type row struct {
	tenant  string
	hash    []byte
	absent  bool
	expires time.Time
}

// round is one lookup: the ids asked for until it runs.
type round struct {
	ids  map[string]bool
	done chan struct{}
	err  error
}

// verifier checks keys against what Postgres said of their ids, kept for ttl:
// a key's secret is compared, in constant time, with the hash it read, and ids
// Postgres does not know are remembered as absent, so a wrong secret or a
// made-up id is refused without another query. Unknown ids are looked up
// together, one query per interval.
type verifier struct {
	ttl      time.Duration
	interval time.Duration
	lookup   func(ctx context.Context, ids []string) (map[string]row, error)

	mu     sync.Mutex
	found  map[string]row
	absent map[string]row
	next   *round
	last   time.Time // when the last lookup began
}

func newVerifier(ttl, interval time.Duration, lookup func(context.Context, []string) (map[string]row, error)) *verifier {
	return &verifier{ttl: ttl, interval: interval, lookup: lookup, found: map[string]row{}, absent: map[string]row{}}
}

// Tenant returns the tenant of a key, ErrUnauthorized, or ErrBusy.
func (v *verifier) Tenant(ctx context.Context, key string) (string, error) {
	id, ok := keyID(key)
	if !ok {
		return "", ErrUnauthorized
	}
	sum := sha256.Sum256([]byte(key))
	for asked := false; ; asked = true {
		v.mu.Lock()
		r, known := v.known(id)
		if known || asked {
			v.mu.Unlock()
			if !known || r.absent || subtle.ConstantTimeCompare(sum[:], r.hash) != 1 {
				return "", ErrUnauthorized
			}
			return r.tenant, nil
		}
		rd, err := v.ask(id)
		v.mu.Unlock()
		if err != nil {
			return "", err
		}
		select {
		case <-rd.done:
		case <-ctx.Done():
			return "", fmt.Errorf("look up API key: %w", ctx.Err())
		}
		if rd.err != nil {
			return "", rd.err
		}
	}
}

// known is what is kept of id, if it has not expired. v.mu is held.
func (v *verifier) known(id string) (row, bool) {
	now := time.Now()
	if r, ok := v.found[id]; ok && now.Before(r.expires) {
		return r, true
	}
	if r, ok := v.absent[id]; ok && now.Before(r.expires) {
		return r, true
	}
	return row{}, false
}

// ask adds id to the next lookup, starting it if none is waiting. v.mu is held.
func (v *verifier) ask(id string) (*round, error) {
	if v.next == nil {
		v.next = &round{ids: map[string]bool{}, done: make(chan struct{})}
		go v.run(v.next)
	}
	if !v.next.ids[id] && len(v.next.ids) >= maxLookupIDs {
		return nil, ErrBusy
	}
	v.next.ids[id] = true
	return v.next, nil
}

// run waits out the interval since the last lookup, then looks up the round's ids
// in one query.
func (v *verifier) run(rd *round) {
	v.mu.Lock()
	wait := time.Until(v.last.Add(v.interval))
	v.mu.Unlock()
	time.Sleep(wait)

	v.mu.Lock()
	v.next, v.last = nil, time.Now()
	ids := make([]string, 0, len(rd.ids))
	for id := range rd.ids {
		ids = append(ids, id)
	}
	v.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	rows, err := v.lookup(ctx, ids)
	cancel()

	v.mu.Lock()
	if err == nil {
		expires := time.Now().Add(v.ttl)
		for _, id := range ids {
			r, ok := rows[id]
			r.expires, r.absent = expires, !ok
			keep := v.found
			if r.absent {
				keep = v.absent
			}
			if len(keep) >= maxKnown {
				clear(keep)
			}
			keep[id] = r
		}
	}
	rd.err = err
	v.mu.Unlock()
	close(rd.done)
}

// lookupRows reads the active keys among ids.
func lookupRows(pool *pgxpool.Pool) func(context.Context, []string) (map[string]row, error) {
	return func(ctx context.Context, ids []string) (map[string]row, error) {
		rows, err := pool.Query(ctx, `SELECT id, tenant, key_hash FROM api_keys WHERE id = ANY($1) AND revoked_at IS NULL`, ids)
		if err != nil {
			return nil, fmt.Errorf("look up API keys: %w", err)
		}
		defer rows.Close()
		out := map[string]row{}
		for rows.Next() {
			var id string
			var r row
			if err := rows.Scan(&id, &r.tenant, &r.hash); err != nil {
				return nil, fmt.Errorf("look up API keys: %w", err)
			}
			out[id] = r
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("look up API keys: %w", err)
		}
		return out, nil
	}
}
