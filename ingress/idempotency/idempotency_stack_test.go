//go:build stack

package idempotency_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

func TestClaimLifecycle(t *testing.T) {
	pool := stacktest.Pool(t)
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	s := idempotency.New(pool, time.Hour, idempotency.DefaultReplayBytes)
	printOf := func(v string) idempotency.Print {
		return idempotency.Print{Value: []byte(v), Matches: func(stored []byte) bool { return string(stored) == v }}
	}
	fp, other := printOf("fp-1"), printOf("fp-2")

	claim := func(key string, fp idempotency.Print, lease time.Duration) (idempotency.Outcome, idempotency.Record) {
		t.Helper()
		out, rec, err := s.Claim(ctx, tenant, key, fp, "wf-"+key, lease)
		if err != nil {
			t.Fatal(err)
		}
		return out, rec
	}
	if out, _ := claim("k", fp, time.Minute); out != idempotency.Claimed {
		t.Fatalf("first claim = %v", out)
	}
	if out, rec := claim("k", fp, time.Minute); out != idempotency.InFlight || rec.RetryAfter <= 0 || rec.RetryAfter > time.Minute {
		t.Fatalf("second claim = %v, retry after %s", out, rec.RetryAfter)
	}
	if out, _ := claim("k", other, time.Minute); out != idempotency.Mismatch {
		t.Fatalf("other body = %v", out)
	}
	if err := s.Complete(ctx, tenant, "k", nil, 202, []byte(`{"id":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if out, rec := claim("k", fp, time.Minute); out != idempotency.Replayed || rec.Status != 202 || string(rec.Body) != `{"id":"x"}` || rec.WorkflowID != "wf-k" {
		t.Fatalf("after complete = %v %+v", out, rec)
	}

	// A request that died leaves a claim whose lease runs out; a retry takes it over.
	claim("dead", fp, 50*time.Millisecond)
	time.Sleep(150 * time.Millisecond)
	if out, _ := claim("dead", fp, time.Minute); out != idempotency.Claimed {
		t.Fatalf("after the lease = %v", out)
	}
	// An unlocked claim is taken over at once by the same request, under the
	// workflow ID first claimed; another body is still refused.
	claim("unlocked", fp, time.Minute)
	if err := s.Unlock(ctx, tenant, "unlocked"); err != nil {
		t.Fatal(err)
	}
	if out, _ := claim("unlocked", other, time.Minute); out != idempotency.Mismatch {
		t.Fatalf("other body after unlock = %v, want Mismatch", out)
	}
	if out, rec, err := s.Claim(ctx, tenant, "unlocked", fp, "wf-other", time.Minute); err != nil || out != idempotency.Claimed || rec.WorkflowID != "wf-unlocked" {
		t.Fatalf("after unlock = %v %+v %v", out, rec, err)
	}

	// An expired record is reclaimed, even with another body.
	short := idempotency.New(pool, 50*time.Millisecond, idempotency.DefaultReplayBytes)
	if out, _, _ := short.Claim(ctx, tenant, "old", fp, "wf-old", time.Minute); out != idempotency.Claimed {
		t.Fatalf("claim = %v", out)
	}
	if err := short.Complete(ctx, tenant, "old", nil, 202, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if out, _, _ := short.Claim(ctx, tenant, "old", other, "wf-old", time.Minute); out != idempotency.Claimed {
		t.Fatalf("expired record not reclaimed: %v", out)
	}
	// Another tenant's key is another key.
	if out, _, _ := s.Claim(ctx, tenant+"-b", "k", other, "wf-b", time.Minute); out != idempotency.Claimed {
		t.Fatalf("other tenant = %v", out)
	}
}

// Holds is true of a key claimed or answered, for its tenant only, and
// false of a key never claimed or whose record expired (a request with it is
// new work).
func TestHoldsIsAKeysLiveRecord(t *testing.T) {
	pool := stacktest.Pool(t)
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	fp := idempotency.Print{Value: []byte("fp"), Matches: func([]byte) bool { return true }}
	s := idempotency.New(pool, time.Hour, idempotency.DefaultReplayBytes)
	short := idempotency.New(pool, 50*time.Millisecond, idempotency.DefaultReplayBytes)
	for store, key := range map[*idempotency.Store]string{s: "k", short: "old"} {
		if _, _, err := store.Claim(ctx, tenant, key, fp, "wf-"+key, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(150 * time.Millisecond) // "old" expires
	for _, c := range []struct {
		tenant, key string
		want        bool
	}{{tenant, "k", true}, {tenant + "-b", "k", false}, {tenant, "never", false}, {tenant, "old", false}} {
		if got, err := s.Holds(ctx, c.tenant, c.key); err != nil || got != c.want {
			t.Errorf("Holds(%s, %s) = %v, %v; want %v", c.tenant, c.key, got, err, c.want)
		}
	}
	if err := s.Complete(ctx, tenant, "k", nil, 202, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Holds(ctx, tenant, "k"); err != nil || !got {
		t.Errorf("Holds of an answered key = %v, %v; want true", got, err)
	}
}

// Concurrent first requests with one key: one claims it, the others see it in
// flight, whichever of them inserts first.
func TestConcurrentFirstClaimsOneWins(t *testing.T) {
	pool := stacktest.Pool(t)
	s := idempotency.New(pool, time.Hour, idempotency.DefaultReplayBytes)
	tenant := stacktest.Name("tenant")
	fp := idempotency.Print{Value: []byte("fp"), Matches: func(stored []byte) bool { return string(stored) == "fp" }}
	for round := range 20 {
		key := fmt.Sprintf("race-%d", round)
		var claimed, inFlight atomic.Int32
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				out, _, err := s.Claim(context.Background(), tenant, key, fp, "wf-"+key, time.Minute)
				switch {
				case err != nil:
					t.Error(err)
				case out == idempotency.Claimed:
					claimed.Add(1)
				case out == idempotency.InFlight:
					inFlight.Add(1)
				default:
					t.Errorf("claim = %v", out)
				}
			})
		}
		wg.Wait()
		if claimed.Load() != 1 || inFlight.Load() != 15 {
			t.Fatalf("%s: %d claimed, %d in flight; want 1 and 15", key, claimed.Load(), inFlight.Load())
		}
	}
}

// Concurrent MarkProcessed calls are written in shared batches, and each learns
// whether it was the one that recorded its event: one per key, however many tried.
func TestMarkProcessedBatchesAndDeduplicates(t *testing.T) {
	pool := stacktest.Pool(t)
	ev := idempotency.NewEvents(pool)
	group, tenant := stacktest.Name("group"), stacktest.Name("tenant")
	var wg sync.WaitGroup
	var mu sync.Mutex
	inserted := map[string]int{}
	for i := range 300 {
		wg.Go(func() {
			id := fmt.Sprintf("e%d", i%100) // each eventId three times, concurrently
			ok, fp, err := ev.MarkProcessed(context.Background(), group, tenant, id, []byte{1, byte(i % 100)}, "wf-"+id)
			if err != nil || fp == nil {
				t.Errorf("mark %s: %v, %v", id, fp, err)
			}
			if ok {
				mu.Lock()
				inserted[id]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var rows int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_events WHERE consumer_group = $1`, group).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 100 || len(inserted) != 100 {
		t.Fatalf("rows %d, events told they were first %d; want 100 and 100", rows, len(inserted))
	}
	for id, n := range inserted {
		if n != 1 {
			t.Fatalf("%s: %d callers told they recorded it, want 1", id, n)
		}
	}
}

// A completed response is answered from the process while its record lives: the
// row is deleted behind the store's back and the key still replays, in this process
// (filled by Complete) and in another (filled by its first read). A record with
// less than the cache's margin to live is always read from Postgres.
func TestCompletedResponsesReplayWithoutARead(t *testing.T) {
	pool := stacktest.Pool(t)
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	printOf := func(v string) idempotency.Print {
		return idempotency.Print{Value: []byte(v), Matches: func(stored []byte) bool { return string(stored) == v }}
	}
	fp, other := printOf("fp-1"), printOf("fp-2")
	drop := func(key string) {
		t.Helper()
		if _, err := pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE tenant = $1 AND key = $2`, tenant, key); err != nil {
			t.Fatal(err)
		}
	}
	claimAndComplete := func(s *idempotency.Store, key string) {
		t.Helper()
		if out, _, err := s.Claim(ctx, tenant, key, fp, "wf-"+key, time.Minute); err != nil || out != idempotency.Claimed {
			t.Fatalf("claim %s = %v %v", key, out, err)
		}
		if err := s.Complete(ctx, tenant, key, nil, 202, []byte(`{"key":"`+key+`"}`)); err != nil {
			t.Fatal(err)
		}
	}

	api1, api2 := idempotency.New(pool, 24*time.Hour, idempotency.DefaultReplayBytes), idempotency.New(pool, 24*time.Hour, idempotency.DefaultReplayBytes)
	claimAndComplete(api1, "k")
	if out, rec, err := api2.Claim(ctx, tenant, "k", fp, "wf-k", time.Minute); err != nil || out != idempotency.Replayed {
		t.Fatalf("first read elsewhere = %v %v", out, err)
	} else if string(rec.Body) != `{"key":"k"}` {
		t.Fatalf("body = %s", rec.Body)
	}
	drop("k")
	for name, s := range map[string]*idempotency.Store{"completing": api1, "reading": api2} {
		out, rec, err := s.Claim(ctx, tenant, "k", fp, "wf-k", time.Minute)
		if err != nil || out != idempotency.Replayed || rec.Status != 202 || string(rec.Body) != `{"key":"k"}` || rec.WorkflowID != "wf-k" {
			t.Fatalf("%s process: %v %+v %v, want the cached replay", name, out, rec, err)
		}
		if out, _, _ := s.Claim(ctx, tenant, "k", other, "wf-k", time.Minute); out != idempotency.Mismatch {
			t.Fatalf("%s process: another body = %v, want Mismatch", name, out)
		}
		if out, _, _ := s.Claim(ctx, tenant+"-"+name, "k", fp, "wf-b", time.Minute); out != idempotency.Claimed {
			t.Fatalf("%s process: another tenant's key = %v, want Claimed", name, out)
		}
	}

	// Records that expire within the cache's lifetime are not cached.
	short := idempotency.New(pool, 5*time.Minute, idempotency.DefaultReplayBytes)
	claimAndComplete(short, "short")
	if out, _, _ := short.Claim(ctx, tenant, "short", fp, "wf-short", time.Minute); out != idempotency.Replayed {
		t.Fatalf("short-lived record = %v", out)
	}
	drop("short")
	if out, _, _ := short.Claim(ctx, tenant, "short", other, "wf-short", time.Minute); out != idempotency.Claimed {
		t.Fatalf("short-lived record after its row went = %v, want Claimed (read from Postgres)", out)
	}
	// Completed by a process with a longer TTL (configs differ during a rollout), the
	// record still lives only as long as its claim said.
	if out, _, _ := short.Claim(ctx, tenant, "mixed", fp, "wf-mixed", time.Minute); out != idempotency.Claimed {
		t.Fatalf("claim mixed = %v", out)
	}
	if err := api1.Complete(ctx, tenant, "mixed", nil, 202, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	drop("mixed")
	if out, _, _ := api1.Claim(ctx, tenant, "mixed", other, "wf-mixed", time.Minute); out != idempotency.Claimed {
		t.Fatalf("short-lived record completed elsewhere = %v, want Claimed (read from Postgres)", out)
	}
}

// A kind's query of what its workflow recorded (ingress.Ledgered) is asked in
// the claim's own statement and by the event log past its rows; a kind
// without one is never asked.
func TestAKindsRecordIsAskedOnlyWhenItSaysWhere(t *testing.T) {
	pool := stacktest.Pool(t)
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	recorded := func(tenant, workflowID string) string {
		return `SELECT '\x01'::bytea WHERE ` + tenant + ` <> '' AND ` + workflowID + ` = 'wf-recorded'`
	}
	fp := idempotency.Print{Value: []byte("fp"), Matches: func(stored []byte) bool { return string(stored) == "fp" }}
	s := idempotency.New(pool, time.Hour, idempotency.DefaultReplayBytes)
	for _, c := range []struct {
		key, workflowID string
		query           idempotency.Query
		want            bool
	}{{"k1", "wf-recorded", recorded, true}, {"k2", "wf-other", recorded, false}, {"k3", "wf-recorded", nil, false}} {
		p := fp
		p.Recorded = c.query
		out, rec, err := s.Claim(ctx, tenant, c.key, p, c.workflowID, time.Minute)
		if err != nil || out != idempotency.Claimed || rec.Recorded != c.want {
			t.Errorf("claim %s of %s: %v, recorded %v, %v; want Claimed, recorded %v", c.key, c.workflowID, out, rec.Recorded, err, c.want)
		}
	}
	ev := idempotency.NewEvents(pool)
	group := stacktest.Name("group")
	if done, stored, err := ev.Processed(ctx, group, tenant, "gone", "wf-recorded", recorded); err != nil || !done || string(stored) != "\x01" {
		t.Errorf("an event past its row, recorded by its kind: %v, %x, %v; want done with the kind's fingerprint", done, stored, err)
	}
	if done, _, err := ev.Processed(ctx, group, tenant, "gone", "wf-recorded", nil); err != nil || done {
		t.Errorf("the same without the kind's query: %v, %v; want not done", done, err)
	}
}
