package idempotency

import (
	"sync"
	"time"
)

// Completed responses are kept in the process for replayLifetime, so that a repeated
// key is answered without a round trip to Postgres. That is exact, not a guess: a
// completed record never changes until it expires (Claim rewrites only expired
// records; Unlock and the lease takeover touch only records without a response), so
// an entry is only cached while its record has at least replayMinLeft to live.
// Postgres says how long that is, as a duration, so the clocks of this process and
// of Postgres need not agree. A record deleted by hand before it expires is still
// replayed here for up to replayLifetime.
const (
	replayLifetime = 5 * time.Minute
	replayMinLeft  = 2 * replayLifetime
	// DefaultReplayBytes bounds the cache's memory (REPLAY_CACHE_BYTES): what its
	// entries hold, keys, fingerprints and bodies, counted in bytes, since a body
	// can be 50 bytes or 50 KiB.
	DefaultReplayBytes = 32 << 20
	// replayEntryOverhead is what an entry costs beyond its bytes: the map slot,
	// the queue item, the headers of its strings and slices.
	replayEntryOverhead = 256
)

type replayKey struct{ tenant, key string }

type replayEntry struct {
	Record
	fingerprint []byte
	expires     time.Time
	seq         uint64
}

type queued struct {
	k   replayKey
	seq uint64
}

// replays is a first-in-first-out cache bounded in bytes: every entry lives as
// long, so the oldest is also the first to expire.
type replays struct {
	mu       sync.Mutex
	entries  map[replayKey]replayEntry
	queue    []queued
	head     int
	seq      uint64
	bytes    int // what the entries hold, by entrySize
	maxBytes int
	life     time.Duration
	now      func() time.Time
}

func newReplays(maxBytes int, life time.Duration, now func() time.Time) *replays {
	return &replays{entries: map[replayKey]replayEntry{}, maxBytes: maxBytes, life: life, now: now}
}

func entrySize(k replayKey, e replayEntry) int {
	return replayEntryOverhead + len(k.tenant) + len(k.key) + len(e.WorkflowID) + len(e.Body) + len(e.fingerprint)
}

func (c *replays) get(tenant, key string) (replayEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[replayKey{tenant, key}]
	if !ok || !c.now().Before(e.expires) {
		return replayEntry{}, false
	}
	return e, true
}

// put keeps a completed response, unless it alone is larger than the cache. An
// entry already there is left as it is: it holds the same response.
func (c *replays) put(tenant, key string, rec Record, fingerprint []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	k := replayKey{tenant, key}
	old, had := c.entries[k]
	if had && now.Before(old.expires) {
		return
	}
	e := replayEntry{Record: rec, fingerprint: fingerprint, expires: now.Add(c.life), seq: c.seq + 1}
	if entrySize(k, e) > c.maxBytes {
		return // Postgres answers it, as it does every key the cache does not hold
	}
	if had {
		c.bytes -= entrySize(k, old)
	}
	c.seq++
	c.entries[k] = e
	c.bytes += entrySize(k, e)
	c.queue = append(c.queue, queued{k, c.seq})
	for c.head < len(c.queue) {
		q := c.queue[c.head]
		e, ok := c.entries[q.k]
		if ok && e.seq == q.seq && c.bytes <= c.maxBytes && now.Before(e.expires) {
			break
		}
		if ok && e.seq == q.seq {
			c.bytes -= entrySize(q.k, e)
			delete(c.entries, q.k)
		}
		c.queue[c.head] = queued{}
		c.head++
	}
	if c.head > len(c.queue)/2 {
		c.queue = append(c.queue[:0], c.queue[c.head:]...)
		c.head = 0
	}
}
