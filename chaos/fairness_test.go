//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/internal/apikeys"
	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/stacktest"
)

// waited places n orders of a tenant one after another with Prefer: wait, as a
// checkout does, and returns how long each took to answer PAID.
func (r *rig) waited(t *testing.T, apiKey, prefix string, n int) []time.Duration {
	t.Helper()
	var took []time.Duration
	for i := range n {
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.apiAddr+"/v1/orders", strings.NewReader(orderJSON))
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Idempotency-Key", fmt.Sprintf("%s-%d", prefix, i))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Prefer", "wait=60")
		began := time.Now()
		resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("POST %s-%d: %v", prefix, i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took = append(took, time.Since(began))
		var o struct{ Status order.Status }
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &o) != nil || o.Status != order.StatusPaid {
			t.Fatalf("POST %s-%d: %d %s", prefix, i, resp.StatusCode, body)
		}
	}
	return took
}

// quantile of durations, by the nearest rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// Tenant A sends 2,000 orders as Kafka events at once; tenant B, on the same
// workers, places 20 orders one after another with Prefer: wait, at rest and
// then during A's flood. Each order's tasks carry its tenant as fairness key, so
// Temporal's matching serves B's tasks beside A's backlog instead of behind it:
// B's p50 during the flood stays within a few times its p50 at rest. Before, B's
// orders waited behind all of A's (26 s against 86 ms), and here B's first order
// is not paid within its 30 s wait.
func TestChaosOneTenantsFloodNeverDelaysAnothers(t *testing.T) {
	const flood, n, maxSlowdown = 2000, 20, 5
	r := newRig(t)
	other := stacktest.Name("tenant")
	otherKey, err := apikeys.New(r.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	r.startWorker(t, nil)
	r.startAPI(t)
	r.waited(t, otherKey, "warm", 3)
	rest := r.waited(t, otherKey, "rest", n)

	msgs := make([]kafka.Message, flood)
	for i := range msgs {
		id := fmt.Sprintf("flood-%d", i)
		r.expect(order.WorkflowID(r.tenant, order.FromEvent, id))
		msgs[i] = kafka.Message{Key: []byte(id), Value: []byte(fmt.Sprintf(`{"eventId":%q,"tenant":%q,"order":%s}`, id, r.tenant, orderJSON))}
	}
	w := r.writer()
	w.BatchSize = 500
	defer w.Close()
	began := time.Now()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	// B starts once A's backlog is in Temporal's queue.
	stacktest.Eventually(t, time.Minute, "a backlog of A's workflows", func() bool {
		return r.count(t, `SELECT count(*) FROM processed_events WHERE consumer_group = $1`, r.group) >= flood/4
	})
	during := r.waited(t, otherKey, "flood", n)
	r.ledger(t, "fairness: tenant A's 2,000 events at once")
	took := time.Since(began)
	settledA := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1 AND status = 'PAID'`, r.tenant)
	line := fmt.Sprintf("%-44s B at rest p50=%s p99=%s; during A's flood p50=%s p99=%s (%.1fx); A: %d paid in %s (%.1f orders/s)",
		"fairness: one tenant's flood, another's orders", quantile(rest, 0.5).Round(time.Millisecond), quantile(rest, 0.99).Round(time.Millisecond),
		quantile(during, 0.5).Round(time.Millisecond), quantile(during, 0.99).Round(time.Millisecond),
		float64(quantile(during, 0.5))/float64(quantile(rest, 0.5)), settledA, took.Round(time.Second), float64(settledA)/took.Seconds())
	t.Log(line)
	appendSummary(line)
	// Without fairness keys B's first order is still PENDING when its 30 s wait
	// ends (over 200 times its p50 at rest). With them, on two cores that A's
	// flood keeps busy, B's steps are served next but run slower: about 3 times.
	if quantile(during, 0.5) > maxSlowdown*quantile(rest, 0.5) {
		t.Fatalf("B's p50 during A's flood is %s, over %d times its p50 at rest (%s)", quantile(during, 0.5), maxSlowdown, quantile(rest, 0.5))
	}
}
