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
	// maxPerClient bounds the unknown ids one client address adds to a lookup:
	// one address's flood leaves the rest of the round to the others.
	maxPerClient = 50
	// maxClients bounds the addresses counted in a round; past it, unknown ids
	// wait for the next round.
	maxClients = 10000
)

type clientKey struct{}

// WithClient names the address a request comes from, for the per-client bound
// of unknown keys' lookups.
func WithClient(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientKey{}, addr)
}

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

// round is one lookup: the ids asked for until it runs, and how many each client
// address added.
type round struct {
	ids     map[string]bool
	clients map[string]int
	done    chan struct{}
	err     error
}

// verifier checks keys against what Postgres said of their ids, kept for ttl:
// a key's secret is compared, in constant time, with the hash it read, and ids
// Postgres does not know are remembered as absent, so a wrong secret or a
// made-up id is refused without another query. Unknown ids are looked up
// together, one query per interval, at most maxPerClient of one client address
// in each. Ids found before whose entry expired are looked up in a lane of their
// own, so a key in use never waits behind a flood of made-up ones.
type verifier struct {
	ttl      time.Duration
	interval time.Duration
	lookup   func(ctx context.Context, ids []string) (map[string]row, error)

	mu     sync.Mutex
	found  map[string]row
	absent map[string]row
	lanes  [2]lane // unknown ids, and ids found before
}

// lane is a sequence of lookups, one per interval.
type lane struct {
	next *round
	last time.Time // when the last lookup began
}

const (
	unknownLane = 0
	knownLane   = 1
)

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
		rd, err := v.ask(id, clientOf(ctx))
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

func clientOf(ctx context.Context) string {
	c, _ := ctx.Value(clientKey{}).(string)
	return c
}

// ask adds id to the next lookup of its lane, starting it if none is waiting: the
// known lane for an id found before (bounded by maxKnown), the unknown one, with
// its bounds, for the rest. v.mu is held.
func (v *verifier) ask(id, client string) (*round, error) {
	l := unknownLane
	if _, ok := v.found[id]; ok {
		l = knownLane
	}
	ln := &v.lanes[l]
	if ln.next == nil {
		ln.next = &round{ids: map[string]bool{}, clients: map[string]int{}, done: make(chan struct{})}
		go v.run(l, ln.next)
	}
	rd := ln.next
	if rd.ids[id] || l == knownLane {
		rd.ids[id] = true
		return rd, nil
	}
	if len(rd.ids) >= maxLookupIDs || client != "" && (rd.clients[client] >= maxPerClient ||
		rd.clients[client] == 0 && len(rd.clients) >= maxClients) {
		return nil, ErrBusy // a caller that names no address has the round's bound alone
	}
	rd.ids[id] = true
	rd.clients[client]++
	return rd, nil
}

// run waits out the interval since its lane's last lookup, then looks up the
// round's ids in one query.
func (v *verifier) run(l int, rd *round) {
	v.mu.Lock()
	ln := &v.lanes[l]
	wait := time.Until(ln.last.Add(v.interval))
	v.mu.Unlock()
	time.Sleep(wait)

	v.mu.Lock()
	ln.next, ln.last = nil, time.Now()
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
				delete(v.found, id) // revoked: an unknown id again
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
