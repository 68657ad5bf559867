package idempotency

import (
	"fmt"
	"testing"
	"time"
)

func TestReplaysExpireAndStayBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newReplays(3, time.Minute, func() time.Time { return now })
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
