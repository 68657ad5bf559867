//go:build stack

package orderflow

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace/noop"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/orderflow/orderflow/contracts"
	"github.com/orderflow/orderflow/customers/erasure"
	"github.com/orderflow/orderflow/customers/receipt"
	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/ingress/refunds"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/platform/records"
	"github.com/orderflow/orderflow/platform/tracing"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/workflows"
)

// erasureStack is the erasure kind as every binary builds it (erasures{}), on
// the real stack: a requests topic, a DLQ, a group, a task queue and a tenant of
// the test's own, and the kind's workflow and activities on a worker of that
// task queue.
type erasureStack struct {
	p                            Platform
	setup                        intake.Setup
	kind                         ingress.Kind
	kafka                        kafkaclient.Cluster
	requests, dlq, group, tenant string
}

func newErasureStack(t *testing.T) *erasureStack {
	t.Helper()
	ctx := context.Background()
	pool, temporal, codec := stacktest.Pool(t), stacktest.Temporal(t), stacktest.Codec(t)
	customers, err := custkeys.Open(ctx, pool, codec)
	if err != nil {
		t.Fatal(err)
	}
	s := &erasureStack{kafka: stacktest.Kafka(t), requests: stacktest.Topic(t, 4), dlq: stacktest.Topic(t, 1),
		group: stacktest.Name("group"), tenant: stacktest.Name("tenant")}
	// As platformOf builds it in the worker.
	s.setup = intake.Setup{Pool: pool, Temporal: temporal, TaskQueue: stacktest.Name("erasures"),
		Logger: stacktest.Logger(t), Codec: codec, Customers: customers}
	s.p = Platform{Pool: pool, Temporal: temporal, Starter: s.setup.Starter(), Records: records.NewStore(pool),
		Logger: stacktest.Logger(t), Getenv: func(string) string { return "" }, Customers: customers}
	if s.kind, err = (erasures{}).Ingress(s.p); err != nil {
		t.Fatal(err)
	}
	if _, err := apikeys.New(pool, apikeys.DefaultCacheTTL).Create(ctx, s.tenant); err != nil {
		t.Fatal(err)
	}
	w := sdkworker.New(temporal, s.setup.TaskQueue, sdkworker.Options{})
	erasures{}.Workflows(w)
	acts, err := erasures{}.Activities(s.p)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		w.RegisterActivity(a)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return s
}

// runConsumer runs the Kafka ingress on the test's topics with the kinds
// newConsumer gives it (orders, refunds, then the erasure), until stop.
func (s *erasureStack) runConsumer(t *testing.T) (reg *prometheus.Registry, stop func()) {
	t.Helper()
	reg = prometheus.NewRegistry()
	group, err := kafkaclient.NewConsumerGroup(s.kafka, s.group, s.requests, stacktest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	readers := func(part int) consumer.PartitionReader {
		return kafkaclient.NewPartitionReader(s.kafka, s.requests, part)
	}
	dlq := kafkaclient.NewWriter(s.kafka, s.dlq)
	in := intake.NewConsumer(s.setup, s.group, orders.ForEvents(s.setup, workflows.Policy{}),
		refunds.New(orderstore.New(s.p.Pool), refundstore.New(s.p.Pool), s.setup.Starter()), s.kind)
	// As newConsumer sets it: a letter naming a customer is sealed under the customer's key.
	opts := consumer.Options{Group: s.group, Topic: s.requests, CommitInterval: 50 * time.Millisecond,
		Customers: consumer.NewCustomers(s.p.Pool, s.p.Customers)}
	c := consumer.New(opts, group, readers, dlq,
		s.setup.Codec, in, apikeys.NewTenants(s.p.Pool, 200*time.Millisecond), stacktest.Logger(t), consumer.NewMetrics(reg),
		tracing.With(noop.NewTracerProvider()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("consumer: %v", err)
			}
			_ = dlq.Close()
		})
	}
	t.Cleanup(stop)
	return reg, stop
}

// produce writes msgs to the requests topic; a transport of its own knows the
// topic the test just made.
func (s *erasureStack) produce(t *testing.T, msgs ...kafka.Message) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(s.kafka.Brokers...), Topic: s.requests, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: s.kafka.Transport()}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// settled reports whether the group committed every partition to its end: each
// message started, a duplicate, or dead-lettered.
func (s *erasureStack) settled(t *testing.T) bool {
	t.Helper()
	committed := stacktest.Committed(t, s.kafka.Client(), s.group, s.requests, 4)
	for part := range 4 {
		if committed[part] != stacktest.EndOffset(t, s.requests, part) {
			return false
		}
	}
	return true
}

// erasureRequested is the erasure's CloudEvent type in the published contract.
const erasureRequested = "dev.orderflow.CustomerErasureRequested.v1"

// An erasure requested on the requests topic, as the envelope's "erasure"
// member and as a CloudEvent of its type, erases its customer once: the same
// eventId twice is one erasure, which completes (a customer with no orders has
// nothing to wait for) with a receipt signed by the deployment's key and a final
// ERASED record. A malformed erasure, and an envelope with an erasure and an
// order, are dead-lettered and start nothing. Every message is checked against
// the published contract first: the consumer takes what it says is valid and
// refuses what it says is not. It takes the erasure's wait for other
// processes' caches (custkeys.CacheTTL).
func TestAnErasureEventErasesItsCustomerOnce(t *testing.T) {
	s := newErasureStack(t)
	const ceSource, ceID = "/test/crm", "erase-1"
	customer, ceCustomer, poisoned := stacktest.Name("cus_erase"), stacktest.Name("cus_erase_ce"), stacktest.Name("cus_poison")
	envelope := func(id, members string) []byte {
		return []byte(fmt.Sprintf(`{"eventId":%q,"tenant":%q,%s}`, id, s.tenant, members))
	}
	erase := envelope("era-1", fmt.Sprintf(`"erasure":{"customer_id":%q}`, customer))
	poison := [][]byte{
		envelope("era-bad", `"erasure":{}`),
		envelope("era-two", fmt.Sprintf(`"erasure":{"customer_id":%q},"order":{"customer_id":%q,"currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":100}],"payment_method":"pm_card_visa"}`,
			poisoned, poisoned)),
	}
	ceData := []byte(fmt.Sprintf(`{"customer_id":%q}`, ceCustomer))
	if env := s.kind.Envelope(); env.Field != "erasure" || env.CloudEventType != erasureRequested {
		t.Fatalf("the kind's envelope %+v, not the contract's (erasure, %s)", env, erasureRequested)
	}
	checkContract(t, erase, ceData, poison)
	ce := kafka.Message{Key: []byte("c"), Value: ceData, Headers: []kafka.Header{
		{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte(ceID)}, {Key: "ce_source", Value: []byte(ceSource)},
		{Key: "ce_type", Value: []byte(erasureRequested)}, {Key: "ce_tenant", Value: []byte(s.tenant)},
		{Key: "content-type", Value: []byte("application/json")}}}
	s.produce(t,
		kafka.Message{Key: []byte("a"), Value: erase}, kafka.Message{Key: []byte("b"), Value: erase}, ce,
		kafka.Message{Key: []byte("p"), Value: poison[0]}, kafka.Message{Key: []byte("p"), Value: poison[1]})
	reg, stop := s.runConsumer(t)
	stacktest.Eventually(t, 60*time.Second, "every event to be settled and committed", func() bool { return s.settled(t) })
	stop()

	metrics := stacktest.MetricsText(reg)
	for name, want := range map[string]float64{"orderflow_consumer_workflow_starts_total": 2,
		"orderflow_consumer_duplicates_total": 1, "orderflow_consumer_dead_lettered_total": 2} {
		if got := stacktest.Metric(t, metrics, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	envWF := identity.WorkflowID(erasure.KindName, s.tenant, identity.FromEvent, "era-1")
	ceWF := identity.WorkflowID(erasure.KindName, s.tenant, identity.FromCloudEvent, identity.CloudEventKey(ceSource, ceID))
	s.checkErased(t, envWF, customer)
	s.checkErased(t, ceWF, ceCustomer)
	s.checkLetters(t, poison, poisoned)
}

// checkContract: the erasures are valid in the published contract (the
// CloudEvent's value as its binary message's payload), the poison is not.
func checkContract(t *testing.T, erase, ceData []byte, poison [][]byte) {
	t.Helper()
	v := stacktest.Contract(t)
	if err := v.Validate(contracts.Envelope, erase); err != nil {
		t.Fatalf("the erasure event is not valid in the contract: %v", err)
	}
	if err := v.Validate("orders.requested/v1/erasure.json", ceData); err != nil {
		t.Fatalf("the CloudEvent's data is not valid in the contract: %v", err)
	}
	for _, p := range poison {
		if v.Validate(contracts.Envelope, p) == nil {
			t.Fatalf("the contract takes %s", p)
		}
	}
}

// checkErased: the workflow ran once and answered a receipt the deployment's
// key verifies, for the tenant and the customer's hash, and its record is final
// and ERASED with that receipt, the customer's ID nowhere in it.
func (s *erasureStack) checkErased(t *testing.T, wf, customer string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stacktest.Eventually(t, 10*time.Second, wf+" to be visible", func() bool { return stacktest.Runs(t, s.p.Temporal, wf) >= 1 })
	if n := stacktest.Runs(t, s.p.Temporal, wf); n != 1 {
		t.Errorf("%s: %d runs, want 1", wf, n)
	}
	var signed receipt.Signed
	if err := s.p.Temporal.GetWorkflow(ctx, wf, "").Get(ctx, &signed); err != nil {
		t.Fatalf("%s: %v", wf, err)
	}
	d, err := s.p.Temporal.DescribeWorkflow(ctx, wf, "")
	if err != nil {
		t.Fatal(err)
	}
	if st := d.RawResponse.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("%s: %v, want completed", wf, st)
	}
	r, err := receipt.Verify(signed, s.p.Customers.Signer().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatalf("%s's receipt: %v", wf, err)
	}
	id := s.kind.PublicID(wf)
	hash := hex.EncodeToString(s.p.Customers.Hasher().Hash(s.tenant, customer))
	if r.ID != id || !strings.HasPrefix(id, "era_") || r.Tenant != s.tenant || r.CustomerHash != hash || len(r.Keys) != 0 ||
		len(r.Stores) == 0 || r.Stores[0].Name != "orders" || r.Stores[0].Affected != 0 {
		t.Errorf("%s's receipt %+v: want %s of %s, hash %s, no orders and no keys", wf, r, id, s.tenant, hash)
	}
	rec, err := s.p.Records.GetByWorkflow(ctx, s.tenant, wf)
	if err != nil {
		t.Errorf("%s's record (GET /v1/erasures/%s reads it): %v", wf, id, err)
		return
	}
	var answer erasure.Answer
	if err := json.Unmarshal(rec.Body, &answer); err != nil || rec.Kind != erasure.KindName || rec.ID != id ||
		rec.Status != erasure.StatusErased || !rec.Final || answer.Status != erasure.StatusErased ||
		answer.Receipt == nil || answer.Receipt.Signature != signed.Signature {
		t.Errorf("%s's record %s %s final %t: %s (%v); want final ERASED with the receipt", wf, rec.Kind, rec.Status, rec.Final, rec.Body, err)
	}
	if bytes.Contains(rec.Body, []byte(customer)) {
		t.Errorf("%s's record holds the customer's ID", wf)
	}
}

// checkLetters: the DLQ holds exactly the poison, each letter saying which
// field is wrong and reading as it was sent (the one naming customer poisoned
// only through the customer's key), and no workflow started for it.
func (s *erasureStack) checkLetters(t *testing.T, poison [][]byte, poisoned string) {
	t.Helper()
	ctx := context.Background()
	if n := stacktest.EndOffset(t, s.dlq, 0); n != int64(len(poison)) {
		t.Fatalf("%d dead letters, want %d", n, len(poison))
	}
	want := map[string]string{string(poison[0]): "erasure.customer_id", string(poison[1]): "one request"}
	for i, m := range stacktest.Messages(t, s.dlq, len(poison)) {
		out, whole, err := consumer.Open(m, s.setup.Codec)
		if err != nil || !whole {
			t.Fatalf("dead letter %d: whole %v, %v", i, whole, err)
		}
		plain, _, err := consumer.Reveal(ctx, m, out, s.p.Customers)
		field, ok := want[string(plain.Value)]
		if err != nil || !ok || !strings.Contains(stacktest.Header(m, consumer.HeaderError), field) ||
			stacktest.Header(m, consumer.HeaderTopic) != s.requests {
			t.Errorf("dead letter %d: %q (%v), headers %v", i, plain.Value, err, m.Headers)
		}
		if bytes.Contains(out.Value, []byte(poisoned)) {
			t.Errorf("dead letter %d holds the customer's ID under the deployment's keys alone", i)
		}
		delete(want, string(plain.Value))
	}
	for _, wf := range []string{identity.WorkflowID(erasure.KindName, s.tenant, identity.FromEvent, "era-bad"),
		identity.WorkflowID(erasure.KindName, s.tenant, identity.FromEvent, "era-two"), order.WorkflowID(s.tenant, order.FromEvent, "era-two")} {
		var missing *serviceerror.NotFound
		if _, err := s.p.Temporal.DescribeWorkflow(context.Background(), wf, ""); !errors.As(err, &missing) {
			t.Errorf("%s: %v; want no workflow for a dead letter", wf, err)
		}
	}
	var rows int
	if err := s.p.Pool.QueryRow(context.Background(), `SELECT count(*) FROM kind_records WHERE tenant = $1`, s.tenant).Scan(&rows); err != nil || rows != 2 {
		t.Errorf("kind_records of the tenant = %d (%v), want 2: the two erasures", rows, err)
	}
}
