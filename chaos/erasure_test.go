//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"github.com/orderflow/orderflow/customers/erasure"
	"github.com/orderflow/orderflow/customers/receipt"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// customer is one customer of the erasure row: its ID, its card's token (a
// card hint, as unique as the customer), and what it placed.
type customer struct {
	id, card  string
	keys      []string // Idempotency-Keys of its HTTP orders
	events    []string // eventIds of its orders on the requests topic
	orders    []string // its paid orders' IDs
	workflows []string
}

func newCustomer(name string) *customer {
	id := stacktest.Name("cus_" + name)
	return &customer{id: id, card: "pm_card_" + strings.NewReplacer("-", "", "_", "").Replace(id)}
}

func (c *customer) body(amount int64) string {
	return fmt.Sprintf(`{"customer_id":%q,"currency":"USD","items":[{"sku":"erasure","quantity":1,"unit_amount":%d}],"payment_method":%q}`,
		c.id, amount, c.card)
}

// A customer who paid, was partly refunded and dead-lettered over HTTP and Kafka
// asks to be forgotten: afterwards neither the customer's ID nor card token is
// in PostgreSQL's dump, Temporal's histories (raw, or decrypted with the
// deployment's keys), search attributes, the topics' messages written after,
// or any process's log; another customer's data reads back whole; the audit
// explains every charge; a refund by order ID and a retried key still answer;
// the receipt verifies and a tampered one does not; and PostgreSQL restored to
// a snapshot from before the erasure, followed by the documented procedure
// (`worker customers reapply`), leaves the customer erased. The whole database
// goes back, so the row runs alone.
func TestChaosACustomerIsForgotten(t *testing.T) {
	r := newRig(t)
	worker := r.startWorker(t, nil)
	api := r.startAPI(t)
	r.reconciler(t) // what the restore loses (the late refund's rows) comes back
	alice, bob := newCustomer("alice"), newCustomer("bob")
	for _, c := range []*customer{alice, bob} {
		r.customerPays(t, c)
	}
	if status, _ := r.requestRefund(t, alice.orders[0], stacktest.Name("part"), 400); status != http.StatusCreated && status != http.StatusAccepted {
		t.Fatalf("partial refund: %d", status)
	}
	r.refundsSettled(t, alice.orders[0], 1, 2*time.Minute)
	r.poisonOf(t, alice)
	dump := r.snapshot(t)
	offsets := r.endOffsets(t)

	signed := r.erase(t, alice, stacktest.Name("erase"))
	r.verifyReceipt(t, signed)

	// What alice left behind is gone; what the ledger needs stays.
	for _, secret := range []string{alice.id, alice.card} {
		r.absentEverywhere(t, secret, alice, offsets, worker.Log, api.Log)
	}
	r.bobIsWhole(t, bob)
	r.afterErasure(t, alice)

	r.restore(t, dump)
	r.reapply(t, alice)
	r.absentFromDump(t, alice.id)
	r.refundsSettled(t, alice.orders[1], 1, 3*time.Minute) // the late refund, rebuilt by the reconciler
}

// customerPays places c's orders, two over HTTP and one on the requests topic,
// and waits for them to be paid.
func (r *rig) customerPays(t *testing.T, c *customer) {
	t.Helper()
	for i := range 2 {
		key := stacktest.Name("key")
		c.keys = append(c.keys, key)
		c.orders = append(c.orders, r.place(t, key, c.body(int64(1299+i))))
		c.workflows = append(c.workflows, r.workflowOf(key))
	}
	ev := stacktest.Name("ev")
	c.events = append(c.events, ev)
	w := r.writer()
	defer w.Close()
	value := fmt.Sprintf(`{"eventId":%q,"tenant":%q,"order":%s}`, ev, r.tenant, c.body(700))
	if err := w.WriteMessages(context.Background(), kafkaMessage(r.tenant, value)); err != nil {
		t.Fatal(err)
	}
	wf := order.WorkflowID(r.tenant, order.FromEvent, ev)
	stacktest.Eventually(t, time.Minute, "the event's order", func() bool { return stacktest.Runs(t, r.Temporal, wf) > 0 })
	c.workflows = append(c.workflows, wf)
	c.orders = append(c.orders, order.IDFor(wf))
	for _, wf := range c.workflows {
		r.settleWorkflow(t, wf)
	}
	if n := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1 AND id = ANY($2) AND status = 'PAID'`, r.tenant, c.orders); n != 3 {
		t.Fatalf("%d of %s's 3 orders paid", n, c.id)
	}
}

// poisonOf dead-letters an event of c's (a currency nobody takes) and waits for
// the letter.
func (r *rig) poisonOf(t *testing.T, c *customer) {
	t.Helper()
	w := r.writer()
	defer w.Close()
	body := strings.Replace(c.body(100), `"USD"`, `"XXX"`, 1)
	value := fmt.Sprintf(`{"eventId":%q,"tenant":%q,"order":%s}`, stacktest.Name("poison"), r.tenant, body)
	if err := w.WriteMessages(context.Background(), kafkaMessage(r.tenant, value)); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, time.Minute, "the poison event's letter", func() bool {
		return stacktest.EndOffset(t, r.dlq, 0) > 0
	})
}

// erase asks for c's erasure with DELETE /v1/customers/{id}, waiting for it,
// and returns its signed receipt; the same key again is the same erasure.
func (r *rig) erase(t *testing.T, c *customer, key string) receipt.Signed {
	t.Helper()
	first, status := r.deleteCustomer(t, c.id, key)
	var a erasure.Answer
	if err := json.Unmarshal(first, &a); err != nil || status != http.StatusCreated && status != http.StatusAccepted || a.ID == "" {
		t.Fatalf("DELETE /v1/customers: %d %s", status, first)
	}
	stacktest.Eventually(t, 2*time.Minute, "the erasure's receipt", func() bool {
		if a.Status == erasure.StatusErased {
			return true
		}
		_ = json.Unmarshal(r.get(t, "/v1/erasures/"+a.ID), &a)
		return false
	})
	again, status := r.deleteCustomer(t, c.id, key)
	var b erasure.Answer
	if err := json.Unmarshal(again, &b); err != nil || b.ID != a.ID || status >= 300 {
		t.Fatalf("the erasure retried answered %d %s, not erasure %s", status, again, a.ID)
	}
	if a.Receipt == nil {
		t.Fatalf("erasure %s has no receipt", a.ID)
	}
	return *a.Receipt
}

func (r *rig) deleteCustomer(t *testing.T, id, key string) ([]byte, int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, "http://"+r.apiAddr+"/v1/customers/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+r.apiKey)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Prefer", "wait=30")
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b, resp.StatusCode
}

// verifyReceipt checks the receipt against the deployment's key, in the test
// and with `worker customers receipt --verify`, and a tampered copy fails both.
func (r *rig) verifyReceipt(t *testing.T, s receipt.Signed) {
	t.Helper()
	keys, err := custkeys.Open(context.Background(), r.Pool, r.Codec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := receipt.Verify(s, keys.Signer().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatalf("the receipt does not verify: %v", err)
	}
	if got.Tenant != r.tenant || len(got.Keys) != 1 || got.Keys[0].DestroyedAt.IsZero() {
		t.Fatalf("receipt %+v: want the tenant and one destroyed key", got)
	}
	affected := map[string]int64{}
	for _, st := range got.Stores {
		affected[st.Name] = st.Affected
	}
	if affected["orders"] != 3 || affected["idempotency_keys"] != 2 || affected["refunds"] != 1 || affected["dead_letters"] != 1 {
		t.Errorf("receipt's counts %v: want 3 orders, 2 stored answers, 1 refund, 1 letter", affected)
	}
	tampered := s
	got.Stores[0].Affected-- // one order fewer than the erasure found
	tampered.Receipt, _ = json.Marshal(got)
	if _, err := receipt.Verify(tampered, keys.Signer().Public().(ed25519.PublicKey)); err == nil {
		t.Fatal("a tampered receipt verifies")
	}
	dir := t.TempDir()
	for name, sg := range map[string]receipt.Signed{"good": s, "tampered": tampered} {
		b, _ := json.Marshal(sg)
		file := filepath.Join(dir, name+".json")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := r.workerCommand(t, "customers", "receipt", "--verify", file)
		if (err == nil) != (name == "good") {
			t.Errorf("worker customers receipt --verify, %s receipt: %v\n%s", name, err, out)
		}
	}
}

// workerCommand runs the worker binary's command with the rig's environment.
func (r *rig) workerCommand(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(stacktest.Binary(t, "cmd/worker"), args...)
	cmd.Env = os.Environ()
	for k, v := range r.workerEnv(nil) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd.CombinedOutput()
}

// endOffsets are the ends of the topics the rig's processes write, before the
// erasure.
func (r *rig) endOffsets(t *testing.T) map[string]int64 {
	t.Helper()
	return map[string]int64{r.Topic: stacktest.EndOffset(t, r.Topic, 0), r.dlq: stacktest.EndOffset(t, r.dlq, 0)}
}

// absentEverywhere fails where secret is found in plain text.
func (r *rig) absentEverywhere(t *testing.T, secret string, c *customer, offsets map[string]int64, logs ...string) {
	t.Helper()
	r.absentFromDump(t, secret)
	for _, wf := range c.workflows {
		raw, decoded := r.histories(t, wf)
		if bytes.Contains(raw, []byte(secret)) || bytes.Contains(decoded, []byte(secret)) {
			t.Errorf("%s is in the history of %s", secret, wf)
		}
		desc, err := r.Temporal.DescribeWorkflow(context.Background(), wf, "")
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := proto.Marshal(desc.RawResponse.GetWorkflowExecutionInfo().GetSearchAttributes()); bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s is in the search attributes of %s", secret, wf)
		}
	}
	for topic, from := range offsets {
		for _, m := range r.messagesFrom(t, topic, from) {
			if bytes.Contains(m, []byte(secret)) {
				t.Errorf("%s is in a message written to %s after the erasure", secret, topic)
			}
		}
	}
	for _, log := range logs {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s is in %s", secret, log)
		}
	}
}

// absentFromDump fails if secret is in plain text in a dump of PostgreSQL.
func (r *rig) absentFromDump(t *testing.T, secret string) {
	t.Helper()
	out, err := exec.Command("pg_dump", "--data-only", r.Env["DATABASE_URL"]).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	if n := bytes.Count(out, []byte(secret)); n > 0 {
		t.Errorf("%s is %d times in pg_dump", secret, n)
	}
}

// histories is the workflow's history as Temporal stores it, and its payloads
// decrypted with the deployment's keys.
func (r *rig) histories(t *testing.T, wf string) (raw, decoded []byte) {
	t.Helper()
	it := r.Temporal.GetWorkflowHistory(context.Background(), wf, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := proto.Marshal(ev)
		raw = append(raw, b...)
		stacktest.WalkPayloads(ev, func(p *commonpb.Payload) {
			out, err := r.Codec.Decode([]*commonpb.Payload{p})
			if err != nil {
				t.Fatalf("decode a payload of %s: %v", wf, err)
			}
			decoded = append(decoded, out[0].GetData()...)
		})
	}
	return raw, decoded
}

// messagesFrom reads every message of the topic's partition 0 from offset on:
// keys, values and headers.
func (r *rig) messagesFrom(t *testing.T, topic string, from int64) [][]byte {
	t.Helper()
	end := stacktest.EndOffset(t, topic, 0)
	if end <= from {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rd := r.Kafka.NewReader(kafka.ReaderConfig{Topic: topic, Partition: 0, MaxWait: kafkaclient.FetchWait})
	defer rd.Close()
	if err := rd.SetOffset(from); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for int64(len(out)) < end-from {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %s: %v", topic, err)
		}
		b := append(append([]byte{}, m.Key...), m.Value...)
		for _, h := range m.Headers {
			b = append(b, h.Value...)
		}
		out = append(out, b)
	}
	return out
}

func kafkaMessage(tenant, value string) kafka.Message {
	return kafka.Message{Key: []byte(tenant), Value: []byte(value)}
}

// bobIsWhole checks another customer's orders read back whole through the API.
func (r *rig) bobIsWhole(t *testing.T, c *customer) {
	t.Helper()
	var page struct {
		Data []struct {
			ID         string `json:"id"`
			CustomerID string `json:"customer_id"`
		} `json:"data"`
	}
	b := r.get(t, "/v1/orders?customer_id="+c.id)
	if err := json.Unmarshal(b, &page); err != nil || len(page.Data) != 3 {
		t.Fatalf("GET /v1/orders?customer_id=%s: %s (%v)", c.id, b, err)
	}
	for _, o := range page.Data {
		if o.CustomerID != c.id {
			t.Errorf("order %s reads customer %q, want %q", o.ID, o.CustomerID, c.id)
		}
	}
}

// afterErasure checks what still works for an erased customer's orders: a
// retried key answers without the customer, a refund by order ID succeeds, and
// the order reads as erased.
func (r *rig) afterErasure(t *testing.T, c *customer) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.apiAddr+"/v1/orders", strings.NewReader(c.body(1300)))
	req.Header.Set("Authorization", "Bearer "+r.apiKey)
	req.Header.Set("Idempotency-Key", c.keys[1])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	replay, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Idempotent-Replayed") != "true" ||
		!bytes.Contains(replay, []byte(`"customer_id":"[erased]"`)) || !bytes.Contains(replay, []byte(c.orders[1])) {
		t.Errorf("a retried key of the erased customer: %d %s", resp.StatusCode, replay)
	}
	if status, b := r.requestRefund(t, c.orders[1], stacktest.Name("late"), 0); status != http.StatusCreated && status != http.StatusAccepted {
		t.Errorf("a late refund of the erased customer's order: %d %s", status, b)
	}
	r.refundsSettled(t, c.orders[1], 1, 2*time.Minute)
	var o struct {
		CustomerID *string `json:"customer_id"`
		Status     string  `json:"status"`
	}
	var b []byte
	stacktest.Eventually(t, time.Minute, "the erased customer's order refunded", func() bool {
		b = r.get(t, "/v1/orders/"+c.orders[1])
		return json.Unmarshal(b, &o) == nil && o.Status == string(order.StatusRefunded)
	})
	if o.CustomerID == nil || *o.CustomerID != "[erased]" {
		t.Errorf("the erased customer's refunded order reads %s", b)
	}
}

// reapply runs the documented procedure after a restore, `worker customers
// reapply`, and checks the customer's keys are destroyed again and its orders
// read erased.
func (r *rig) reapply(t *testing.T, c *customer) {
	t.Helper()
	live := `SELECT count(*) FROM customer_keys WHERE tenant = $1 AND wrapped IS NOT NULL
		AND customer_hash = (SELECT customer_hash FROM orders WHERE id = $2)`
	if n := r.count(t, live, r.tenant, c.orders[0]); n != 1 {
		t.Fatalf("the restore brought back %d of the customer's keys, want 1: the row tests nothing", n)
	}
	if out, err := r.workerCommand(t, "customers", "reapply", "--since", "1h", "--tenant", r.tenant); err != nil {
		t.Fatalf("worker customers reapply: %v\n%s", err, out)
	}
	if n := r.count(t, live, r.tenant, c.orders[0]); n != 0 {
		t.Errorf("%d of the erased customer's keys live after the reapply", n)
	}
	var o struct {
		CustomerID string `json:"customer_id"`
	}
	stacktest.Eventually(t, time.Minute, "the erased customer's order to read erased again", func() bool {
		return json.Unmarshal(r.get(t, "/v1/orders/"+c.orders[0]), &o) == nil && o.CustomerID == "[erased]"
	})
}
