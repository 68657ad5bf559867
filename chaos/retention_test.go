//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/retention"
)

// retry sends a POST with key and body and returns its status, the order it
// answered, whether it says it is a replay and when it says the key expires.
func (r *rig) retry(t *testing.T, key, body string) (status int, orderID string, replayed bool, expires time.Time) {
	t.Helper()
	a, err := r.send(r.apiKey, key, body, "")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ ID string }
	_ = json.Unmarshal(a.body, &v)
	expires, _ = http.ParseTime(a.header.Get("Idempotency-Key-Expires"))
	return a.status, v.ID, a.header.Get("Idempotent-Replayed") == "true", expires
}

// A client retries a POST seconds before its key expires, and again after the
// workers' pruner deleted the key: the first is a replay of the key's record; the
// second gets the same order from the orders ledger (the documented outcome past
// a key's retention), another body with the key gets 422, and nothing is charged
// twice.
func TestChaosRetriesAtTheEdgesOfAKeysRetention(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, map[string]string{"PRUNE_INTERVAL": "1s"})
	api := r.startAPI(t)
	ctx := context.Background()
	key := stacktest.Name("edge")
	wf := order.WorkflowID(r.tenant, order.FromHTTP, key)
	r.expect(wf)
	status, first, _, expires := r.retry(t, key, orderJSON)
	if status != http.StatusAccepted || expires.Sub(time.Now().Add(24*time.Hour)).Abs() > time.Minute {
		t.Fatalf("first POST: %d, key expires %s; want 202, in 24 h (IDEMPOTENCY_TTL)", status, expires)
	}
	r.paid(t, 1)
	// The API keeps completed responses in memory; a new process reads Postgres.
	api.Signal(syscall.SIGTERM)
	if code := api.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("api exited %d", code)
	}
	r.startAPI(t)

	// The window is wide enough for a new process's first request on a busy
	// machine: a retry that lands after it takes the expired key over, which is
	// another outcome (a key expiring in 24 h).
	const window = 10 * time.Second
	var left float64
	if err := r.Pool.QueryRow(ctx, `UPDATE idempotency_keys SET expires_at = now() + make_interval(secs => $3)
		WHERE tenant = $1 AND key = $2 RETURNING extract(epoch FROM expires_at - now())::float8`, r.tenant, key, window.Seconds()).Scan(&left); err != nil {
		t.Fatal(err)
	}
	status, again, replayed, expires := r.retry(t, key, orderJSON)
	if status != http.StatusAccepted || again != first || !replayed || time.Until(expires) > window+time.Second {
		t.Fatalf("retry %.1f s before the key expires: %d %s replayed=%v expires %s; want 202 %s, a replay, expiring now",
			left, status, again, replayed, expires, first)
	}

	stacktest.Eventually(t, window+time.Minute, "the workers to prune the expired key", func() bool {
		return r.count(t, `SELECT count(*) FROM idempotency_keys WHERE tenant = $1 AND key = $2`, r.tenant, key) == 0
	})
	status, late, replayed, _ := r.retry(t, key, orderJSON)
	if status != http.StatusAccepted || late != first || !replayed {
		t.Fatalf("retry after the key was pruned: %d %s replayed=%v; want 202 %s from the ledger", status, late, replayed, first)
	}
	if status, _, _, _ := r.retry(t, key, strings.Replace(orderJSON, `"quantity":1`, `"quantity":3`, 1)); status != http.StatusUnprocessableEntity {
		t.Fatalf("another body with the pruned key: %d, want 422", status)
	}
	time.Sleep(2 * time.Second) // would a new run charge?
	r.ledger(t, "retries at the edges of a key's retention")
}

// An event is redelivered inside the event log's retention, and again
// after the workers pruned its row, Temporal deleted its workflow and the
// provider forgot its keys: both are the first order. Before, the second started
// a new run, which charged again.
func TestChaosEventRedeliveredAfterTheEventLogForgotIt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, map[string]string{"PRUNE_INTERVAL": "1s"})
	ctx := context.Background()
	w := r.writer()
	defer w.Close()
	id := stacktest.Name("evt")
	wf := order.WorkflowID(r.tenant, order.FromEvent, id)
	r.produce(t, w, id, nil)
	r.paid(t, 1)
	r.atEnd(t)

	keep := retention.Defaults.Events
	// Five minutes inside: the pruner runs every second, and a busy machine may take
	// minutes to deliver the redelivery; the row must still be there when it lands.
	if _, err := r.Pool.Exec(ctx, `UPDATE processed_events SET processed_at = now() - make_interval(secs => $3)
		WHERE tenant = $1 AND event_id = $2`, r.tenant, id, (keep - 5*time.Minute).Seconds()); err != nil {
		t.Fatal(err)
	}
	r.produce(t, w, id, nil)
	r.atEnd(t)
	if n := r.count(t, `SELECT count(*) FROM processed_events WHERE tenant = $1 AND event_id = $2 AND processed_at < now() - interval '1 day'`, r.tenant, id); n != 1 {
		all := r.count(t, `SELECT count(*) FROM processed_events WHERE tenant = $1 AND event_id = $2`, r.tenant, id)
		t.Fatalf("the redelivery inside the retention was processed again: %d rows as first recorded (of %d), want 1", n, all)
	}

	if _, err := r.Pool.Exec(ctx, `UPDATE processed_events SET processed_at = now() - make_interval(secs => $3)
		WHERE tenant = $1 AND event_id = $2`, r.tenant, id, (keep + time.Hour).Seconds()); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, 30*time.Second, "the workers to prune the event's row", func() bool {
		return r.count(t, `SELECT count(*) FROM processed_events WHERE tenant = $1 AND event_id = $2`, r.tenant, id) == 0
	})
	r.forgetWorkflow(t, wf)
	r.Sim.Prune()
	r.produce(t, w, id, nil)
	r.atEnd(t)
	time.Sleep(2 * time.Second) // would a new run charge?
	charges := len(r.Sim.ChargesForOrder(order.IDFor(wf)))
	_, err := r.Temporal.DescribeWorkflow(ctx, wf, "")
	var nf *serviceerror.NotFound
	if charges != 1 || !errors.As(err, &nf) {
		t.Fatalf("redelivered after the event log, Temporal and the provider forgot it: %d charges, a new run: %v; want 1 and none",
			charges, !errors.As(err, &nf))
	}
	r.oneOrderLeft(t, "event redelivered after its row was pruned", fmt.Sprintf("orders=1 charges=%d", charges))
}
