//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// snapshot dumps orderflow's database (its rows: the schema stays) to a file, as
// an operator's pg_dump would, and returns the file.
func (r *rig) snapshot(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "orderflow.dump")
	if out, err := exec.Command("pg_dump", "--format=custom", "--data-only", "--exclude-table-data=goose_db_version", "--file="+file, r.Env["DATABASE_URL"]).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v: %s", err, out)
	}
	return file
}

// restore replaces every row of orderflow's database with the snapshot's while
// the services run, in one transaction (they wait on its locks, then see the
// snapshot): what a restore from a backup, or a promoted replica that lost the
// last commits, leaves. The whole database goes back, so the row runs alone.
func (r *rig) restore(t *testing.T, file string) {
	t.Helper()
	tables, err := pgx.CollectRows(r.query(t, //nolint:rowserrcheck // CollectRows checks rows.Err
		`SELECT quote_ident(tablename) FROM pg_tables
		WHERE schemaname = 'public' AND tablename <> 'goose_db_version'`), pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	script := file + ".sql"
	if out, err := exec.Command("pg_restore", "--data-only", "--disable-triggers", "--file="+script, file).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v: %s", err, out)
	}
	// The services write while the tables are truncated: PostgreSQL may end the
	// restore as one side of a deadlock, which rolls it back whole; an operator
	// runs it again, and so does this.
	for attempt := 1; ; attempt++ {
		out, err := exec.Command("psql", "--single-transaction", "--quiet", "--set=ON_ERROR_STOP=1", "--dbname="+r.Env["DATABASE_URL"],
			"--command=TRUNCATE "+strings.Join(tables, ", "), "--file="+script).CombinedOutput()
		if err == nil {
			return
		}
		if !strings.Contains(string(out), "deadlock detected") || attempt == 5 {
			t.Fatalf("restore: %v: %s", err, out)
		}
	}
}

func (r *rig) query(t *testing.T, sql string, args ...any) pgx.Rows {
	t.Helper()
	rows, err := r.Pool.Query(context.Background(), sql, args...) //nolint:rowserrcheck // the caller reads the rows, and their error

	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// PostgreSQL is restored to a snapshot taken before 20 HTTP and 10 Kafka orders
// were paid; Temporal, Kafka and the provider remember them.
func TestChaosPostgresRestoredToASnapshot(t *testing.T) {
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	r.reconciler(t)
	var dump string
	r.loseTheTail(t, "PostgreSQL restored to a snapshot", func() { dump = r.snapshot(t) }, func() { r.restore(t, dump) })
}

// loseTheTail has the database lose what 20 HTTP and 10 Kafka orders wrote,
// paid between before (the point it goes back to) and lose (which makes it go
// back). Within two reconcile intervals every lost order reads PAID again under
// its own ID, and nothing is refunded; retries of the 20 keys name their
// orders; the 10 events delivered again make no order; a new order is paid; the
// ledger balances.
func (r *rig) loseTheTail(t *testing.T, fault string, before, lose func()) {
	t.Helper()
	before()
	ids := map[string]string{} // order ID by key or event ID
	for i := range 20 {
		key := "lost-" + strconv.Itoa(i)
		r.expect(r.workflowOf(key))
		ids[key] = r.place(t, key, orderJSON)
	}
	w := r.writer()
	defer w.Close()
	events := make([]string, 10)
	for i := range events {
		events[i] = stacktest.Name("lost-event")
		r.produce(t, w, events[i], []byte(events[i]))
		ids[events[i]] = order.IDFor(order.WorkflowID(r.tenant, order.FromEvent, events[i]))
	}
	r.paid(t, 30)
	// Every order's workflow has ended, so none writes its row again after the
	// loss: each comes back by the reconciler's rebuild alone.
	for i := range 20 {
		r.settle(t, "lost-"+strconv.Itoa(i))
	}
	for _, e := range events {
		r.settleWorkflow(t, order.WorkflowID(r.tenant, order.FromEvent, e))
	}
	lost := make([]string, 0, len(ids))
	for _, id := range ids {
		lost = append(lost, id)
	}

	// The reconciler may rebuild an order as soon as the database is back: that
	// each was lost shows in its row_rebuilt finding, written only for a row
	// missing or not yet paid.
	lose()
	defer func() {
		if t.Failed() {
			rep, err := r.newReconciler().Pass(context.Background())
			t.Logf("a pass now: %+v, %v", rep, err)
		}
	}()
	stacktest.Eventually(t, reconcileWithin, "the 30 lost orders to read PAID again", func() bool {
		return r.count(t, `SELECT count(*) FROM orders WHERE id = ANY($1) AND status = 'PAID'`, lost) == 30
	})
	for _, id := range lost {
		for _, c := range r.Sim.ChargesForOrder(id) {
			if c.AmountRefunded != 0 {
				t.Errorf("order %s: charge %s refunded %d", id, c.ID, c.AmountRefunded)
			}
		}
	}
	rebuilt := r.count(t, `SELECT count(*) FROM reconcile_findings WHERE order_id = ANY($1) AND kind = $2 AND action = $3`,
		lost, reconcile.KindRowRebuilt, reconcile.ActionRebuilt)

	for i := range 20 {
		key := "lost-" + strconv.Itoa(i)
		if status, id := r.postBody(t, key, orderJSON); id != ids[key] || status >= 300 {
			t.Errorf("retry of %s: %d %q, want its order %s", key, status, id, ids[key])
		}
	}
	for _, e := range events {
		r.produce(t, w, e, []byte(e))
	}
	stacktest.Eventually(t, time.Minute, "the 10 events delivered again to be consumed", func() bool {
		return r.committed(t) == 20
	})
	if n := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, r.tenant); n != 30 {
		t.Fatalf("%d orders after the events were delivered again, want the 30", n)
	}
	r.order(t, "after-the-loss")
	r.ledger(t, fault)
	line := fmt.Sprintf("%-44s lost=30 rebuilt=%d refunded=%d", fault+": rebuilt", rebuilt, len(r.Sim.Refunds()))
	t.Log(line)
	appendSummary(line)
	if rebuilt != 30 {
		t.Fatalf("%d row_rebuilt findings for the 30 lost orders", rebuilt)
	}
}

// An order placed, paid and cancelled in its window (refunded in full) after the
// snapshot: the restore loses it, and its key retried on a new API pod records
// it again. The
// reconciler writes it back CANCELLED, as its workflow ended it; no run takes
// its refunded intent for a payment, and nothing is charged or refunded again.
func TestChaosACancelledOrderLostToARestoreStaysCancelled(t *testing.T) {
	r := newRig(t)
	r.apiEnv = map[string]string{"CANCEL_WINDOW": "10m"}
	r.startWorker(t, nil)
	api := r.startAPI(t)
	r.reconciler(t)
	dump := r.snapshot(t)
	id := r.place(t, "cancelled-then-lost", orderJSON)
	r.waitStatus(t, id, order.StatusPaid, time.Minute)
	if code := r.cancel(t, id); code != 200 && code != 202 {
		t.Fatalf("cancel: %d", code)
	}
	r.waitStatus(t, id, order.StatusCancelled, time.Minute)
	r.settle(t, "cancelled-then-lost")
	r.restore(t, dump)
	// A pod started since holds no answer of the key in its memory: the retry
	// reaches the database, which has forgotten the key.
	api.Kill(t)
	r.startAPI(t)
	if status, got := r.postBody(t, "cancelled-then-lost", orderJSON); got != id || status >= 300 {
		t.Fatalf("retry of the key: %d %q, want its order %s", status, got, id)
	}
	r.waitStatus(t, id, order.StatusCancelled, reconcileWithin)
	time.Sleep(2 * reconcileEvery) // would a later pass move it?
	charges := r.Sim.ChargesForOrder(id)
	var refunded int64
	for _, c := range charges {
		refunded += c.AmountRefunded
	}
	line := fmt.Sprintf("%-44s orders=1 status=%s charges=%d refunded=%d", "restore: a cancelled order's key retried",
		order.StatusCancelled, len(charges), refunded)
	t.Log(line)
	appendSummary(line)
	if r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND status = 'CANCELLED'`, id) != 1 || len(charges) != 1 ||
		refunded != charges[0].Amount || len(r.Sim.Refunds()) != 1 {
		t.Fatalf("after the restore: %s, %d refunds at the provider", line, len(r.Sim.Refunds()))
	}
}

// A refund of 300 by HTTP and one of 200 by Kafka succeed after the snapshot
// PostgreSQL is then restored to, and one of 100 is at the provider when it is:
// their rows, the key, the processed event and the order's amount are lost,
// while the provider and Temporal remember them. Within two reconcile intervals
// each refund reads SUCCEEDED under its ID (the one in flight ends too) and the
// order says 600; a retry of the key names its refund SUCCEEDED, and the event
// delivered again makes none; a new refund larger than what is really left
// fails. The provider refunded 300, 200 and 100, once each.
func TestChaosARefundLostToARestoreIsRebuilt(t *testing.T) {
	r := newRig(t)
	r.startWorker(t, nil)
	api := r.startAPI(t)
	r.reconciler(t)
	id := r.paidOrder(t, "refund-then-lost")
	dump := r.snapshot(t)
	code, body := r.requestRefund(t, id, "lost-300", 300)
	var first struct{ ID, Status string }
	if err := json.Unmarshal(body, &first); err != nil || (code != 201 && code != 202) || first.ID == "" {
		t.Fatalf("refund: %d %s", code, body)
	}
	w := r.writer()
	defer w.Close()
	r.produceRefund(t, w, "lost-200", id, 200)
	r.refundsSettled(t, id, 2, time.Minute)
	stacktest.Eventually(t, time.Minute, "the order to say 500 refunded", func() bool {
		return r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND amount_refunded = 500`, id) == 1
	})
	var eventRefund string
	if err := r.Pool.QueryRow(context.Background(), `SELECT id FROM refunds WHERE order_id = $1 AND amount = 200`, id).Scan(&eventRefund); err != nil {
		t.Fatal(err)
	}
	// A third, of 100, is at the provider for 8 s when the database goes back.
	r.Sim.SetFaults(sandbox.Faults{Only: "refund", LatencyMS: 8000, Slow: 1})
	code, body = r.requestRefund(t, id, "in-flight-100", 100)
	var inFlight struct{ ID string }
	if err := json.Unmarshal(body, &inFlight); err != nil || code >= 300 || inFlight.ID == "" {
		t.Fatalf("refund in flight: %d %s", code, body)
	}
	stacktest.Eventually(t, time.Minute, "the refund of 100 reserved", func() bool {
		return r.count(t, `SELECT count(*) FROM refunds WHERE id = $1 AND amount = 100`, inFlight.ID) == 1
	})
	r.restore(t, dump)
	api.Kill(t) // a new pod: no answer of the key in memory
	r.startAPI(t)
	within := reconcileWithin
	stacktest.Eventually(t, within, "the lost refund to read SUCCEEDED under its ID", func() bool {
		var v struct{ Status string }
		return json.Unmarshal(r.get(t, "/v1/refunds/"+first.ID), &v) == nil && v.Status == string(refund.StatusSucceeded)
	})
	stacktest.Eventually(t, within, "the event's lost refund to read SUCCEEDED under its ID", func() bool {
		var v struct{ Status string }
		return json.Unmarshal(r.get(t, "/v1/refunds/"+eventRefund), &v) == nil && v.Status == string(refund.StatusSucceeded)
	})
	stacktest.Eventually(t, within+10*time.Second, "the refund in flight to end SUCCEEDED under its ID", func() bool {
		var v struct{ Status string }
		return json.Unmarshal(r.get(t, "/v1/refunds/"+inFlight.ID), &v) == nil && v.Status == string(refund.StatusSucceeded)
	})
	stacktest.Eventually(t, within, "the order to say 600 refunded", func() bool {
		return r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND amount_refunded = 600`, id) == 1
	})
	r.produceRefund(t, w, "lost-200", id, 200) // delivered again: the consumer has forgotten it
	code, body = r.requestRefund(t, id, "lost-300", 300)
	var again struct{ ID, Status string }
	if err := json.Unmarshal(body, &again); err != nil || code >= 300 || again.ID != first.ID || again.Status != string(refund.StatusSucceeded) {
		t.Fatalf("retry of the key: %d %s, want refund %s SUCCEEDED", code, body, first.ID)
	}
	stacktest.Eventually(t, within, "the retried key's refund to read SUCCEEDED", func() bool {
		var v struct{ Status string }
		return json.Unmarshal(r.get(t, "/v1/refunds/"+first.ID), &v) == nil && v.Status == string(refund.StatusSucceeded)
	})
	if code, body := r.requestRefund(t, id, "too-much", 1000); code < 300 {
		r.refundsSettled(t, id, 4, time.Minute)
		if n := r.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1 AND status = 'FAILED' AND amount_requested = 1000`, id); n != 1 {
			t.Fatalf("a refund of 1000 with 699 left: %d %s, not failed", code, body)
		}
	}
	if n := r.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1 AND status = 'SUCCEEDED'`, id); n != 3 {
		t.Fatalf("%d refunds of the order SUCCEEDED, want the three lost ones", n)
	}
	requests, cancels, outside := r.providerRefunds(t, id)
	line := fmt.Sprintf("%-44s refunded=%d (requests=%d cancels=%d outside=%d)", "restore: refunds of 300, 200 (Kafka), 100 lost",
		requests+cancels+outside, requests, cancels, outside)
	t.Log(line)
	appendSummary(line)
	if requests != 600 || cancels+outside != 0 || len(r.Sim.Refunds()) != 3 {
		t.Fatalf("the provider refunded other than 300, 200 and 100 once each: %s", line)
	}
}
