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
	// replayCapacity bounds the memory: about 1 KiB per entry with a long key.
	replayCapacity = 20000
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

// replays is a bounded first-in-first-out cache: every entry lives as long, so the
// oldest is also the first to expire.
type replays struct {
	mu      sync.Mutex
	entries map[replayKey]replayEntry
	queue   []queued
	head    int
	seq     uint64
	max     int
	life    time.Duration
	now     func() time.Time
}

func newReplays(max int, life time.Duration, now func() time.Time) *replays {
	return &replays{entries: map[replayKey]replayEntry{}, max: max, life: life, now: now}
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

// put keeps a completed response. An entry already there is left as it is: it
// holds the same response.
func (c *replays) put(tenant, key string, rec Record, fingerprint []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	k := replayKey{tenant, key}
	if e, ok := c.entries[k]; ok && now.Before(e.expires) {
		return
	}
	c.seq++
	c.entries[k] = replayEntry{Record: rec, fingerprint: fingerprint, expires: now.Add(c.life), seq: c.seq}
	c.queue = append(c.queue, queued{k, c.seq})
	for c.head < len(c.queue) {
		q := c.queue[c.head]
		e, ok := c.entries[q.k]
		if ok && e.seq == q.seq && len(c.entries) <= c.max && now.Before(e.expires) {
			break
		}
		if ok && e.seq == q.seq {
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
