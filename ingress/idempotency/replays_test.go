package idempotency

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

func TestReplaysExpireAndStayBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newReplays(3*280, time.Minute, func() time.Time { return now }) // three small entries
	rec := func(i int) Record {
		return Record{WorkflowID: fmt.Sprint("wf-", i), Status: 202, Body: []byte(fmt.Sprint(i))}
	}

	c.put("t1", "k", rec(1), []byte("fp"))
	if e, ok := c.get("t1", "k"); !ok || string(e.Body) != "1" || string(e.fingerprint) != "fp" {
		t.Fatalf("get = %+v %v", e, ok)
	}
	if _, ok := c.get("t2", "k"); ok {
		t.Fatal("another tenant's key was found")
	}
	// A second put of a live key keeps the first response.
	c.put("t1", "k", rec(9), []byte("other"))
	if e, _ := c.get("t1", "k"); string(e.Body) != "1" {
		t.Fatalf("body = %s after a second put", e.Body)
	}

	now = now.Add(time.Minute)
	if _, ok := c.get("t1", "k"); ok {
		t.Fatal("entry outlived its lifetime")
	}
	// The expired entry is put again: the queue's stale item must not evict the new one.
	c.put("t1", "k", rec(2), []byte("fp"))
	now = now.Add(30 * time.Second)
	c.put("t1", "a", rec(3), nil)
	c.put("t1", "b", rec(4), nil)
	if e, ok := c.get("t1", "k"); !ok || string(e.Body) != "2" {
		t.Fatalf("re-put entry = %+v %v", e, ok)
	}
	// Over capacity the oldest goes first.
	c.put("t1", "c", rec(5), nil)
	if _, ok := c.get("t1", "k"); ok {
		t.Fatal("oldest entry kept over capacity")
	}
	for _, k := range []string{"a", "b", "c"} {
		if _, ok := c.get("t1", k); !ok {
			t.Fatalf("%s evicted before the oldest", k)
		}
	}
	if len(c.entries) != 3 || len(c.queue)-c.head != 3 {
		t.Fatalf("%d entries, %d queued", len(c.entries), len(c.queue)-c.head)
	}
	// Many puts keep the memory bounded.
	for i := range 1000 {
		now = now.Add(time.Millisecond)
		c.put("t1", fmt.Sprint("many-", i), rec(i), nil)
	}
	if len(c.entries) != 3 || len(c.queue) > 8 {
		t.Fatalf("%d entries, queue of %d after 1000 puts", len(c.entries), len(c.queue))
	}
}

// A flood of distinct keys with 20 KB responses, as long item lists make: the
// cache holds at most its bytes, and the heap stays near them.
func TestReplaysBoundedInBytes(t *testing.T) {
	const budget = 8 << 20
	now := time.Unix(1000, 0)
	c := newReplays(budget, time.Minute, func() time.Time { return now })
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 20000 {
		body := make([]byte, 20<<10)
		c.put("acme", fmt.Sprintf("key-%06d", i), Record{WorkflowID: fmt.Sprint("order:acme:key-", i), Status: 201, Body: body}, make([]byte, 32))
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if c.bytes > budget {
		t.Fatalf("cache holds %d bytes, over its %d", c.bytes, budget)
	}
	if n := len(c.entries); n < 300 || n > budget/(20<<10) {
		t.Fatalf("%d entries of 20 KiB in %d bytes", n, budget)
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 2*budget {
		t.Fatalf("heap grew by %d MiB for a %d MiB cache", grown>>20, budget>>20)
	}
	t.Logf("%d entries, %d KiB held, heap +%d KiB", len(c.entries), c.bytes>>10, (int64(after.HeapAlloc)-int64(before.HeapAlloc))>>10)
	// One response larger than the cache is not kept, and evicts nothing.
	n := len(c.entries)
	c.put("acme", "huge", Record{Body: make([]byte, budget)}, nil)
	if _, ok := c.get("acme", "huge"); ok || len(c.entries) != n {
		t.Fatalf("a response larger than the cache: kept %v, %d entries left of %d", ok, len(c.entries), n)
	}
}
