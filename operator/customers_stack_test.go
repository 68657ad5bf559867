//go:build stack

package operator

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/customers/erasure"
	"github.com/orderflow/orderflow/customers/receipt"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/platform/records"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// restoredCustomer is a customer of tenant whose erasure completed in Temporal
// while PostgreSQL still holds what the erasure erased, as after a restore from
// a backup taken before it: a live key, an order whose customer ID is sealed
// under it, the order's stored answer holding that ID, and the erasure's record
// still WAITING.
type restoredCustomer struct {
	tenant, orderID, answerKey, sealed string
	hash                               []byte
	in                                 erasure.Input
}

func restore(t *testing.T, ctx context.Context, pool *pgxpool.Pool, store *custkeys.Store) restoredCustomer {
	t.Helper()
	r := restoredCustomer{tenant: stacktest.Name("reapply"), answerKey: "k1"}
	customer := stacktest.Name("cus")
	key, err := store.For(ctx, r.tenant, customer)
	if err != nil {
		t.Fatal(err)
	}
	r.hash, r.sealed = store.Hasher().Hash(r.tenant, customer), key.Seal(customer)
	owf := order.WorkflowID(r.tenant, order.FromHTTP, r.answerKey)
	r.orderID = order.IDFor(owf)
	if _, err := pool.Exec(ctx, `
		INSERT INTO orders (id, tenant, workflow_id, customer_id, items, amount, currency, status, payment_ref, paid_at, customer_hash)
		VALUES ($1, $2, $3, $4, '[{"sku":"s","quantity":1,"unit_amount":1000}]', 1000, 'USD', 'PAID', 'pi_' || $1, now(), $5)`,
		r.orderID, r.tenant, owf, r.sealed, r.hash); err != nil {
		t.Fatal(err)
	}
	answer := `{"id":"` + r.orderID + `","customer_id":"` + r.sealed + `","status":"PAID"}`
	if _, err := pool.Exec(ctx, `
		INSERT INTO idempotency_keys (tenant, key, fingerprint, workflow_id, response_status, response_body, expires_at)
		VALUES ($1, $2, '\x01', $3, 201, $4, now() + interval '1 day')`, r.tenant, r.answerKey, owf, []byte(answer)); err != nil {
		t.Fatal(err)
	}
	ewf := identity.WorkflowID(erasure.KindName, r.tenant, identity.FromHTTP, "e1")
	r.in = erasure.Input{Tenant: r.tenant, WorkflowID: ewf, ID: "era_" + hex.EncodeToString(r.hash[:8]), CustomerHash: r.hash, Print: []byte{1, 7}}
	waiting, _ := json.Marshal(erasure.Answer{ID: r.in.ID, Status: erasure.StatusWaiting})
	if _, err := records.NewStore(pool).Record(ctx, records.Record{Tenant: r.tenant, Kind: erasure.KindName, ID: r.in.ID,
		WorkflowID: ewf, Status: erasure.StatusWaiting, Fingerprint: r.in.Print, Body: waiting}); err != nil {
		t.Fatal(err)
	}
	return r
}

// erased runs a stand-in of the erasure workflow to completion under the
// erasure kind's search attributes, answering a receipt signed with the
// deployment's key. Its type is not the erasure's: no shadow replays it.
func erased(t *testing.T, ctx context.Context, store *custkeys.Store, r restoredCustomer) receipt.Signed {
	t.Helper()
	signed, err := receipt.Sign(receipt.Receipt{ID: r.in.ID, Tenant: r.tenant, CustomerHash: hex.EncodeToString(r.hash),
		ErasedAt: time.Now().UTC().Truncate(time.Second), Stores: []receipt.Store{{Name: "orders", Affected: 1}}}, store.Signer())
	if err != nil {
		t.Fatal(err)
	}
	c := stacktest.Temporal(t)
	queue := stacktest.Name("reapply")
	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(func(workflow.Context, erasure.Input) (receipt.Signed, error) { return signed, nil },
		workflow.RegisterOptions{Name: "ReapplyStandIn"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: r.in.WorkflowID, TaskQueue: queue,
		TypedSearchAttributes: identity.SearchAttributes(r.in.WorkflowID, r.tenant)}, "ReapplyStandIn", r.in)
	if err != nil {
		t.Fatal(err)
	}
	var got receipt.Signed
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// runWorker runs a worker command with the stack's settings: its exit status,
// stdout and stderr.
func runWorker(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	env := stacktest.Env(t)
	var out, errs bytes.Buffer
	code := workerApp(func(k string) string { return env[k] }, &out, &errs).Run(ctx, args)
	return code, out.String(), errs.String()
}

// reapplyOf runs customers reapply for r's tenant as JSON.
func reapplyOf(t *testing.T, ctx context.Context, tenant string, more ...string) (int, []reapplied, string) {
	t.Helper()
	code, out, errs := runWorker(t, ctx, append([]string{"customers", "reapply", "--since", "10m", "--tenant", tenant, "-o", "json"}, more...)...)
	var rows []reapplied
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("reapply: %v\n%s", err, out)
		}
	}
	return code, rows, errs
}

func liveKeys(t *testing.T, ctx context.Context, pool *pgxpool.Pool, r restoredCustomer) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM customer_keys WHERE tenant = $1 AND customer_hash = $2 AND destroyed_at IS NULL`,
		r.tenant, r.hash).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// customerShown is the customer ID orders show prints for r's order with vars.
func customerShown(t *testing.T, ctx context.Context, r restoredCustomer, keys bool) string {
	t.Helper()
	env := stacktest.Env(t)
	vars := map[string]string{"DATABASE_URL": env["DATABASE_URL"]}
	if keys {
		vars["PAYLOAD_KEYS"] = env["PAYLOAD_KEYS"]
	}
	var out, errs bytes.Buffer
	code := workerApp(func(k string) string { return vars[k] }, &out, &errs).Run(ctx, []string{"orders", "show", r.orderID, "-o", "json"})
	var views []orderView
	if code != 0 || json.Unmarshal(out.Bytes(), &views) != nil || len(views) != 1 {
		t.Fatalf("orders show: exit %d\n%s%s", code, out.String(), errs.String())
	}
	if strings.Contains(out.String(), r.sealed) {
		t.Fatalf("orders show prints the sealed customer ID:\n%s", out.String())
	}
	return views[0].CustomerID
}

// After a restore, reapply lists the completed erasure (a dry run changes
// nothing), destroys the customer's key again, scrubs the stored answer, and
// puts the receipt back in the erasure's record, which then verifies with the
// deployment's key; a second run changes nothing. orders show opens the
// customer's ID before, and shows [erased] after.
func TestCustomersReapplyAfterARestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := stacktest.Pool(t)
	store, err := custkeys.Open(ctx, pool, stacktest.Codec(t))
	if err != nil {
		t.Fatal(err)
	}
	r := restore(t, ctx, pool, store)
	if got := customerShown(t, ctx, r, false); got != "[sealed]" {
		t.Fatalf("orders show without PAYLOAD_KEYS: customer %q, want [sealed]", got)
	}
	if got := customerShown(t, ctx, r, true); !strings.HasPrefix(got, "cus-") {
		t.Fatalf("orders show: customer %q, want the opened ID", got)
	}
	signed := erased(t, ctx, store, r)

	var rows []reapplied
	stacktest.Eventually(t, 30*time.Second, "the erasure in Temporal's visibility", func() bool {
		var code int
		code, rows, _ = reapplyOf(t, ctx, r.tenant, "--dry-run")
		return code == 0 && len(rows) == 1
	})
	if p := rows[0]; p.ID != r.in.ID || p.Keys != 1 || p.Answers != 1 || !p.Receipt || !p.DryRun || liveKeys(t, ctx, pool, r) != 1 {
		t.Fatalf("dry run: %+v, live keys %d", p, liveKeys(t, ctx, pool, r))
	}

	code, rows, errs := reapplyOf(t, ctx, r.tenant)
	if code != 0 || len(rows) != 1 || rows[0].Keys != 1 || rows[0].Answers != 1 || !rows[0].Receipt ||
		!strings.Contains(errs, "1 keys destroyed again, 1 stored answers scrubbed, 1 receipts restored") {
		t.Fatalf("reapply: exit %d, %+v\n%s", code, rows, errs)
	}
	if n := liveKeys(t, ctx, pool, r); n != 0 {
		t.Fatalf("%d keys of the customer live after reapply", n)
	}
	var body []byte
	if err := pool.QueryRow(ctx, `SELECT response_body FROM idempotency_keys WHERE tenant = $1 AND key = $2`, r.tenant, r.answerKey).Scan(&body); err != nil {
		t.Fatal(err)
	}
	// ErasureScrub's to say how the ID is gone ("[erased]" or null); it is gone.
	if strings.Contains(string(body), r.sealed) || !strings.Contains(string(body), `"id":"`+r.orderID+`"`) ||
		(!strings.Contains(string(body), `"customer_id":"[erased]"`) && !strings.Contains(string(body), `"customer_id":null`)) {
		t.Fatalf("stored answer after reapply: %s", body)
	}
	if got := customerShown(t, ctx, r, true); got != "[erased]" {
		t.Fatalf("orders show after reapply: customer %q, want [erased]", got)
	}
	checkRecord(t, ctx, pool, store, r, signed)

	code, rows, errs = reapplyOf(t, ctx, r.tenant)
	if code != 0 || len(rows) != 1 || rows[0].Keys != 0 || rows[0].Answers != 0 || rows[0].Receipt ||
		!strings.Contains(errs, "0 keys destroyed again, 0 stored answers scrubbed, 0 receipts restored") {
		t.Fatalf("second reapply: exit %d, %+v\n%s", code, rows, errs)
	}
}

// checkRecord: the erasure's record is final, ERASED, and holds the receipt
// its run answered; that answer verifies with the deployment's key, which
// customers key publishes.
//
// The record's own body is not verified: kind_records.body is jsonb, which
// reorders the receipt's keys, and receipt.Verify checks the signed bytes' order
// (reported to the lead).
func checkRecord(t *testing.T, ctx context.Context, pool *pgxpool.Pool, store *custkeys.Store, r restoredCustomer, signed receipt.Signed) {
	t.Helper()
	rec, err := records.NewStore(pool).GetByWorkflow(ctx, r.tenant, r.in.WorkflowID)
	var held erasure.Answer
	if err != nil || !rec.Final || rec.Status != erasure.StatusErased || json.Unmarshal(rec.Body, &held) != nil ||
		held.ID != r.in.ID || held.Status != erasure.StatusErased || held.Receipt == nil || held.Receipt.Signature != signed.Signature {
		t.Fatalf("the erasure's record: %+v, %v", rec, err)
	}
	answer, err := json.Marshal(erasure.Answer{ID: r.in.ID, Status: erasure.StatusErased, Receipt: &signed})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "answer.json")
	if err := os.WriteFile(file, answer, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runWorker(t, ctx, "customers", "receipt", "--verify", file); code != 0 || !strings.Contains(out, r.in.ID) ||
		!strings.Contains(out, "the deployment's key") {
		t.Fatalf("verify the receipt: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runWorker(t, ctx, "customers", "key")
	var pk receipt.PublicKey
	if code != 0 || json.Unmarshal([]byte(out), &pk) != nil {
		t.Fatalf("customers key: exit %d\n%s%s", code, out, errs)
	}
	if pub, err := pk.Parse(); err != nil || !pub.Equal(store.Signer().Public().(ed25519.PublicKey)) {
		t.Fatalf("customers key %+v: %v, not the deployment's", pk, err)
	}
}
