//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/client"
	"github.com/orderflow/orderflow/contracts"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/workertest"
)

const orderJSON = `{"customer_id":"cus_1","currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":500}],"payment_method":"pm_card_visa"}`

// rig is the whole service on the real stack: worker and API as child processes,
// the payment sandbox in the test process, topics and a tenant of its own.
type rig struct {
	*workertest.Orders
	tenant, apiKey       string
	requests, dlq, group string
	apiAddr, opsAddr     string
	apiOpsAddr           string
	httpGap, eventGap    time.Duration     // pauses of the traffic's clients between requests
	apiEnv               map[string]string // added to the API processes' environment
	fleetAPIs            []string          // when set, POSTs go round-robin to these API addresses
	next                 atomic.Int64      // round-robin position
	mu                   sync.Mutex
	keys                 []string // workflow IDs the clients asked for
	nextAction           string   // the type of the last next action awaitCustomer saw
	contract             *contracts.Validator
	// probe sends a POST once; careful retries it as a careful client does.
	probe, careful *client.Client
	orderReq       client.OrderRequest // orderJSON as the client sends it
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{Orders: workertest.NewOrders(t), tenant: stacktest.Name("tenant"), group: stacktest.Name("group"),
		httpGap: 50 * time.Millisecond, eventGap: 30 * time.Millisecond, contract: stacktest.Contract(t)}
	r.requests = stacktest.Topic(t, 4)
	r.dlq = stacktest.Topic(t, 1)
	key, err := apikeys.New(r.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), r.tenant)
	if err != nil {
		t.Fatal(err)
	}
	r.apiKey = key
	r.probe, r.careful = r.client(1), r.client(1000)
	if err := json.Unmarshal([]byte(orderJSON), &r.orderReq); err != nil {
		t.Fatal(err)
	}
	r.apiAddr, r.opsAddr, r.apiOpsAddr = stacktest.FreeAddr(t), stacktest.FreeAddr(t), stacktest.FreeAddr(t)
	t.Cleanup(func() { r.audit(t) }) // last, once the rig's processes have stopped
	return r
}

func (r *rig) workerEnv(extra map[string]string) map[string]string {
	env := r.WorkerEnv()
	env["REQUESTS_TOPIC"], env["DLQ_TOPIC"], env["CONSUMER_GROUP"], env["OPS_ADDR"] = r.requests, r.dlq, r.group, r.opsAddr
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func (r *rig) startWorker(t *testing.T, extra map[string]string) *stacktest.Proc {
	t.Helper()
	env := r.workerEnv(extra)
	p := stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), env)
	waitHTTP(t, "http://"+env["OPS_ADDR"]+"/healthz")
	return p
}

func (r *rig) startAPI(t *testing.T) *stacktest.Proc {
	t.Helper()
	return r.startAPIOn(t, r.apiAddr, r.apiOpsAddr, "0s")
}

// startAPIOn starts an API process on the given public and ops addresses.
func (r *rig) startAPIOn(t *testing.T, addr, opsAddr, drainDelay string) *stacktest.Proc {
	t.Helper()
	return r.startAPIBinary(t, stacktest.Binary(t, "cmd/api"), addr, opsAddr, drainDelay)
}

// startAPIBinary starts bin, a build of cmd/api, as startAPIOn does.
func (r *rig) startAPIBinary(t *testing.T, bin, addr, opsAddr, drainDelay string) *stacktest.Proc {
	t.Helper()
	env := testkit.Connections(r.Env, map[string]string{"TASK_QUEUE": r.Queue,
		"API_ADDR": addr, "OPS_ADDR": opsAddr, "DRAIN_DELAY": drainDelay, "PAYMENT_LOOKUP_DELAY": workertest.LookupDelay.String(),
	})
	for k, v := range r.apiEnv {
		env[k] = v
	}
	p := stacktest.Start(t, bin, env)
	waitHTTP(t, "http://"+opsAddr+"/healthz")
	return p
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	stacktest.Eventually(t, 30*time.Second, url, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

func (r *rig) expect(workflowID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, workflowID)
}

// rotate sends each request to the rig's API, or round-robin to its fleet's.
type rotate struct{ r *rig }

func (t rotate) RoundTrip(req *http.Request) (*http.Response, error) {
	addr := t.r.apiAddr
	if n := len(t.r.fleetAPIs); n > 0 {
		addr = t.r.fleetAPIs[t.r.next.Add(1)%int64(n)]
	}
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = addr, addr
	return http.DefaultTransport.RoundTrip(req)
}

// client is orderflow's client on the rig's API key, retrying as it does by
// default for up to 3 minutes (attempts at most: MaxAttempts), each request to
// the API the rig runs then (rotate).
func (r *rig) client(maxAttempts int) *client.Client {
	c, err := client.New(client.Options{BaseURL: "http://api.invalid", APIKey: r.apiKey, MaxAttempts: maxAttempts,
		MaxElapsed: 3 * time.Minute, HTTPClient: &http.Client{Timeout: 30 * time.Second, Transport: rotate{r}}})
	if err != nil {
		panic(err)
	}
	return c
}

// post sends one POST and returns its status and Retry-After.
func (r *rig) post(key string) (int, int, error) {
	placed, err := r.probe.PlaceOrder(context.Background(), r.orderReq, client.WithKey(key))
	var p *client.Problem
	switch {
	case errors.As(err, &p):
		return p.Status, int(p.RetryAfter.Seconds()), nil
	case err != nil:
		return 0, 0, err
	case placed.Finished:
		return http.StatusCreated, 0, nil
	}
	return http.StatusAccepted, 0, nil
}

// answer is a response to send, its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// send POSTs body as an order with apiKey and key, and Prefer: prefer unless
// empty.
func (r *rig) send(apiKey, key, body, prefer string) (answer, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.apiAddr+"/v1/orders", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	if prefer != "" {
		req.Header.Set("Prefer", prefer)
	}
	resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}, err
}

// order places one order as a careful client does, with orderflow's client: the
// same key on every attempt, honouring Retry-After, through broken connections.
func (r *rig) order(t *testing.T, key string) {
	r.expect(order.WorkflowID(r.tenant, order.FromHTTP, key))
	if _, err := r.careful.PlaceOrder(context.Background(), r.orderReq, client.WithKey(key)); err != nil {
		t.Errorf("POST %s: %v", key, err)
	}
}

// writer has its own transport (see consumer tests): the default one caches metadata.
func (r *rig) writer() *kafka.Writer {
	return &kafka.Writer{Addr: kafka.TCP(r.Kafka.Brokers...), Topic: r.requests, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: r.Kafka.Transport(), MaxAttempts: 20, WriteBackoffMax: time.Second}
}

// produce writes one event, retrying until the broker has it for sure.
func (r *rig) produce(t *testing.T, w *kafka.Writer, eventID string, key []byte) {
	r.expect(order.WorkflowID(r.tenant, order.FromEvent, eventID))
	r.produceAs(t, w, r.tenant, eventID, key)
}

// produceAs writes one event of tenant's, as produce does.
func (r *rig) produceAs(t *testing.T, w *kafka.Writer, tenant, eventID string, key []byte) {
	value := []byte(fmt.Sprintf(`{"eventId":%q,"tenant":%q,"order":%s}`, eventID, tenant, orderJSON))
	if err := r.contract.Validate(contracts.Envelope, value); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := w.WriteMessages(context.Background(), kafka.Message{Key: key, Value: value})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("produce %s: %v", eventID, err)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// count runs a count query, retrying a little: the pool may hold connections that
// a Postgres restart broke.
func (r *rig) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	var err error
	for range 10 {
		if err = r.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err == nil {
			return n
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatal(err)
	return 0
}

// ledger waits for every expected order to be paid, then checks that orders in
// Postgres = workflows = charges = distinct keys, and that every (order, event type)
// has one eventId on the events topic. It prints the fault's summary line.
func (r *rig) ledger(t *testing.T, fault string) {
	t.Helper()
	r.mu.Lock()
	ids := map[string]bool{}
	for _, k := range r.keys {
		ids[k] = true
	}
	r.mu.Unlock()
	n := len(ids)
	paid := func() int { return r.paidOf(t, r.tenant) }
	// Two minutes without an order paid is four times the longest retry backoff.
	if err := stacktest.Progressing(2*time.Minute, 10*time.Minute, n, paid); err != nil {
		r.diagnose(t)
		t.Fatalf("waiting for %d orders to be paid: %v", n, err)
	}
	orders := r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1`, r.tenant)
	workflows, charges := 0, 0
	for id := range ids {
		stacktest.Eventually(t, 30*time.Second, "visibility of "+id, func() bool { return stacktest.Runs(t, r.Temporal, id) > 0 })
		workflows += stacktest.Runs(t, r.Temporal, id)
		c := len(r.Sim.ChargesForOrder(order.IDFor(id)))
		if c != 1 {
			t.Errorf("%s: %d charges", id, c)
		}
		charges += c
	}
	allCharges := 0 // the rig's tenant's: another tenant may share its sandbox
	for _, c := range r.Sim.Charges("") {
		if tenant, ok := c.Metadata["tenant"]; !ok || tenant == r.tenant {
			allCharges++
		}
	}
	// OrderPaid is published just after the order is marked PAID.
	var messages, distinct int
	stacktest.Eventually(t, time.Minute, "an OrderPaid event per order", func() bool {
		messages, distinct = r.events(t, n)
		return distinct >= n
	})
	balanced, pending := r.payments(t)
	refunds := len(r.Sim.Refunds())
	line := fmt.Sprintf("%-44s keys=%d orders=%d workflows=%d charges=%d refunds=%d events=%d distinct-eventIds=%d payments-net=amount:%d/%d pending-payments=%d",
		fault, n, orders, workflows, allCharges, refunds, messages, distinct, balanced, orders, pending)
	t.Log(line)
	appendSummary(line)
	if orders != n || workflows != n || charges != n || allCharges != n || distinct != n || refunds != 0 || balanced != orders || pending != 0 {
		t.Fatalf("ledger does not balance: %s", line)
	}
}

// paidOf counts the tenant's PAID orders.
func (r *rig) paidOf(t *testing.T, tenant string) int {
	t.Helper()
	return r.count(t, `SELECT count(*) FROM orders WHERE tenant = $1 AND status = 'PAID'`, tenant)
}

// diagnose logs where the orders and events stand when the ledger does not settle.
func (r *rig) diagnose(t *testing.T) {
	t.Helper()
	rows, err := r.Pool.Query(context.Background(), `SELECT status, count(*) FROM orders WHERE tenant = $1 GROUP BY status`, r.tenant)
	if err == nil {
		for rows.Next() {
			var st string
			var n int
			_ = rows.Scan(&st, &n)
			t.Logf("orders %s: %d", st, n)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Logf("orders: %v", err)
		}
	}
	t.Logf("processed events: %d; committed offsets: %d; worker /readyz: %d",
		r.count(t, `SELECT count(*) FROM processed_events WHERE consumer_group = $1`, r.group), r.committed(t), status(t, "http://"+r.opsAddr+"/readyz"))
}

// appendSummary adds a line to the fault suite's summary file, if make test asked
// for one.
func appendSummary(line string) {
	if path := os.Getenv("ORDERFLOW_CHAOS_SUMMARY"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// payments reads the payments ledger of the tenant's orders: how many orders net
// exactly what their status says (the amount when PAID or DISPUTED, less what
// others refunded when PARTIALLY_REFUNDED; 0 when FAILED, CANCELLED, REFUNDED or
// PAYMENT_DECLINED), and how many payment rows are still pending.
func (r *rig) payments(t *testing.T) (balanced, pending int) {
	t.Helper()
	rows, err := r.Pool.Query(context.Background(), `
		SELECT o.status, o.amount - COALESCE(o.amount_refunded, 0),
		       COALESCE(sum(CASE p.kind WHEN 'charge' THEN p.amount ELSE -p.amount END) FILTER (WHERE p.status = 'succeeded'), 0),
		       count(p.*) FILTER (WHERE p.status = 'pending')
		FROM orders o LEFT JOIN payments p ON p.order_id = o.id
		WHERE o.tenant = $1 GROUP BY o.id, o.status, o.amount, o.amount_refunded`, r.tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var amount, net int64
		var p int
		if err := rows.Scan(&st, &amount, &net, &p); err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		switch order.Status(st) {
		case order.StatusPaid, order.StatusDisputed, order.StatusPartiallyRefunded:
			want = amount // less what others refunded
		}
		if net == want {
			balanced++
		} else {
			t.Errorf("an order %s nets %d in the payments ledger, want %d", st, net, want)
		}
		pending += p
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return balanced, pending
}

// events reads the events topic to its end and checks one eventId per (order, type);
// it returns the messages read and the distinct OrderPaid eventIds.
func (r *rig) events(t *testing.T, want int) (messages, distinctPaid int) {
	t.Helper()
	ids := map[string]map[string]bool{} // order/type -> eventIds
	paid := map[string]bool{}
	for _, e := range r.readEvents(t) {
		if e.Tenant != r.tenant {
			continue // another tenant sharing the rig's workers
		}
		messages++
		k := e.OrderID + "/" + e.Type
		if ids[k] == nil {
			ids[k] = map[string]bool{}
		}
		ids[k][e.EventID] = true
		if e.Type == activities.EventOrderPaid {
			paid[e.EventID] = true
		}
	}
	for k, set := range ids {
		if len(set) != 1 {
			t.Errorf("%s has %d eventIds", k, len(set))
		}
	}
	return messages, len(paid)
}
