package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/internal/stacktest"
)

func TestClaimLifecycle(t *testing.T) {
	pool := stacktest.Pool(t)
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	s := idempotency.New(pool, time.Hour)
	fp, other := []byte("fp-1"), []byte("fp-2")

	claim := func(key string, fp []byte, lease time.Duration) (idempotency.Outcome, idempotency.Record) {
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
	if err := s.Complete(ctx, tenant, "k", 202, []byte(`{"id":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if out, rec := claim("k", fp, time.Minute); out != idempotency.Replay || rec.Status != 202 || string(rec.Body) != `{"id":"x"}` || rec.WorkflowID != "wf-k" {
		t.Fatalf("after complete = %v %+v", out, rec)
	}

	// A request that died leaves a claim whose lease runs out; a retry takes it over.
	claim("dead", fp, 50*time.Millisecond)
	time.Sleep(150 * time.Millisecond)
	if out, _ := claim("dead", fp, time.Minute); out != idempotency.Claimed {
		t.Fatalf("after the lease = %v", out)
	}
	// A released claim starts over at once.
	claim("released", fp, time.Minute)
	if err := s.Release(ctx, tenant, "released"); err != nil {
		t.Fatal(err)
	}
	if out, _ := claim("released", fp, time.Minute); out != idempotency.Claimed {
		t.Fatalf("after release = %v", out)
	}

	// An expired record is reclaimed, even with another body.
	short := idempotency.New(pool, 50*time.Millisecond)
	if out, _, _ := short.Claim(ctx, tenant, "old", fp, "wf-old", time.Minute); out != idempotency.Claimed {
		t.Fatalf("claim = %v", out)
	}
	if err := short.Complete(ctx, tenant, "old", 202, []byte(`{}`)); err != nil {
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
