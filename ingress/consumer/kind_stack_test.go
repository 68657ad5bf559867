//go:build stack

package consumer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker"
)

// ---- the kind ----
//
// "greeting" is a kind this test registers, shipped nowhere: a request
// {"name": "..."} whose workflow answers "hello, " and the name. Everything from
// here to "the tests" is the kind's own code; the ingresses do the rest.

// greetingKind begins the kind's workflow IDs and scopes its keys and events.
const greetingKind = "greeting"

// greetingRequested is the CloudEvent type of a greeting's request.
const greetingRequested = "dev.orderflow.test.GreetingRequested.v1"

// greetRequest is the request: a name of 1 to 64 visible ASCII characters.
type greetRequest struct {
	Name string `json:"name"`
}

// decodeGreeting reads a request strictly (unknown fields and trailing data
// refused); every error is a *ingress.FieldError.
func decodeGreeting(data []byte) (greetRequest, error) {
	var r greetRequest
	if err := ingress.DecodeStrict(data, &r); err != nil {
		return r, err
	}
	ok := len(r.Name) >= 1 && len(r.Name) <= 64
	for i := 0; ok && i < len(r.Name); i++ {
		ok = identity.Visible(r.Name[i])
	}
	if !ok {
		return r, &ingress.FieldError{Field: "name", Message: "must be 1 to 64 visible ASCII characters"}
	}
	return r, nil
}

// Fingerprint is a version byte and a digest of the name: a field added later
// makes version 2, and Same still reads version 1.
func (r greetRequest) Fingerprint() []byte {
	sum := sha256.Sum256([]byte(r.Name))
	return append([]byte{1}, sum[:]...)
}

// Same reports whether a stored fingerprint is this request's.
func (r greetRequest) Same(stored []byte) bool { return bytes.Equal(stored, r.Fingerprint()) }

// greetInput is the workflow's input.
type greetInput struct{ Name string }

// greet is the kind's workflow.
func greet(_ workflow.Context, in greetInput) (string, error) { return "hello, " + in.Name, nil }

// greetWorkflow is the name greet is registered and started under.
const greetWorkflow = "Greet"

// registerGreet adds the workflow to a worker: a shipped kind's line in worker.New.
func registerGreet(w sdkworker.Worker) {
	w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: greetWorkflow})
}

// greetings is the kind. It has no table: its answer is read from Temporal.
type greetings struct {
	starter  intake.Starter
	temporal client.Client
}

var _ ingress.Kind = (*greetings)(nil)

func (*greetings) Name() string                                         { return greetingKind }
func (*greetings) PublicID(wf string) string                            { return identity.PublicID("grt_", greetingKind, wf) }
func (*greetings) Decode(p json.RawMessage) (ingress.Request, error)    { return decodeGreeting(p) }
func (*greetings) Admit(context.Context, string, ingress.Request) error { return nil } // every valid greeting

// Envelope: a plain event's "greeting", or a CloudEvent of type greetingRequested.
func (*greetings) Envelope() ingress.Envelope {
	return ingress.Envelope{Field: "greeting", CloudEventType: greetingRequested}
}

func (k *greetings) Start(ctx context.Context, tenant, wf string, req ingress.Request) (ingress.Run, error) {
	return k.starter.Start(ctx, tenant, wf, greetWorkflow, greetInput{Name: req.(greetRequest).Name})
}

func (k *greetings) StartNew(ctx context.Context, tenant, wf string, req ingress.Request) (bool, error) {
	return k.starter.StartNew(ctx, tenant, wf, greetWorkflow, greetInput{Name: req.(greetRequest).Name})
}

// StartSettled is not offered: a client that waits waits on the run's end.
func (*greetings) StartSettled(context.Context, string, string, ingress.Request, time.Duration) (ingress.View, error) {
	return ingress.View{}, errors.New("greetings answer a wait by their run's end")
}

func (k *greetings) Placed(ctx context.Context, wf string) ([]byte, error) {
	var in greetInput
	if err := k.starter.Input(ctx, wf, &in); err != nil {
		return nil, err
	}
	return greetRequest(in).Fingerprint(), nil
}

// Record has nothing to write: the answer is the request, accepted.
func (k *greetings) Record(_ context.Context, _, wf string, req ingress.Request) (ingress.View, error) {
	return k.view(wf, req.(greetRequest).Name, ""), nil
}

// View reads the workflow's input, and its greeting once it completed.
func (k *greetings) View(ctx context.Context, _, wf string) (ingress.View, error) {
	d, err := k.temporal.DescribeWorkflow(ctx, wf, "")
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		return ingress.View{}, ingress.ErrNoView
	case err != nil:
		return ingress.View{}, err
	}
	var in greetInput
	if err := k.starter.Input(ctx, wf, &in); err != nil {
		return ingress.View{}, err
	}
	var said string
	if d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		if err := k.temporal.GetWorkflow(ctx, wf, "").Get(ctx, &said); err != nil {
			return ingress.View{}, err
		}
	}
	return k.view(wf, in.Name, said), nil
}

func (k *greetings) view(wf, name, said string) ingress.View {
	v := struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Status   string `json:"status"`
		Greeting string `json:"greeting,omitempty"`
	}{k.PublicID(wf), name, "ACCEPTED", said}
	if said != "" {
		v.Status = "DONE"
	}
	body, _ := json.Marshal(v)
	return ingress.View{ID: v.ID, Body: body, Final: said != "", Fingerprint: greetRequest{Name: name}.Fingerprint()}
}

// ---- the tests ----

// startGreetings runs the pipeline's worker with the kind's workflow registered
// beside the orders' (as worker.New would), and returns the kind on the
// pipeline's starter.
func (p *pipeline) startGreetings(t *testing.T) *greetings {
	t.Helper()
	events := kafkaclient.NewWriter(p.Kafka, p.Topic)
	w := worker.New(p.Temporal, worker.Options{TaskQueue: p.Queue, StopTimeout: 5 * time.Second},
		worker.NewActivities(p.Pool, provider.New(provider.Config{URL: p.SimURL, Timeout: 2 * time.Second}, nil), events,
			prometheus.NewRegistry(), p.Tracing))
	registerGreet(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Stop()
		_ = events.Close()
	})
	return &greetings{starter: p.Starter(), temporal: p.Temporal}
}

// runConsumerOf runs a consumer of orders and the kinds given, as runConsumer does.
func (p *pipeline) runConsumerOf(t *testing.T, kinds ...ingress.Kind) (*prometheus.Registry, func()) {
	t.Helper()
	reg := prometheus.NewRegistry()
	group, err := kafkaclient.NewConsumerGroup(p.Kafka, p.group, p.requests, stacktest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	readers := func(part int) consumer.PartitionReader {
		return kafkaclient.NewPartitionReader(p.Kafka, p.requests, part)
	}
	dlq := kafkaclient.NewWriter(p.Kafka, p.dlq)
	c := consumer.New(consumer.Options{Group: p.group, Topic: p.requests, CommitInterval: 50 * time.Millisecond}, group, readers, dlq, p.Codec,
		p.ConsumerIntake(p.group, kinds...), apikeys.NewTenants(p.Pool, 200*time.Millisecond), stacktest.Logger(t), consumer.NewMetrics(reg), p.Tracing)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("consumer: %v", err)
			}
			dlq.Close()
		})
	}
	t.Cleanup(stop)
	return reg, stop
}

// describe is the type of the workflow ID's current run, failing if there is none.
func describe(t *testing.T, c client.Client, wf string) string {
	t.Helper()
	d, err := c.DescribeWorkflow(context.Background(), wf, "")
	if err != nil {
		t.Fatalf("describe %s: %v", wf, err)
	}
	return d.RawResponse.GetWorkflowExecutionInfo().GetType().GetName()
}

// oneRun waits until the workflow ID is visible and checks it has one run.
func oneRun(t *testing.T, c client.Client, wf string) {
	t.Helper()
	stacktest.Eventually(t, 10*time.Second, wf+" to be visible", func() bool { return stacktest.Runs(t, c, wf) >= 1 })
	if n := stacktest.Runs(t, c, wf); n != 1 {
		t.Errorf("%s: %d runs, want 1", wf, n)
	}
}

// A kind the ingress has never seen gets, over HTTP, a keyed start, the stored
// response replayed, a mismatch for another body, Prefer: wait by its run's end,
// and keys of its own: the key an order uses names another workflow.
func TestAThirdKindOverHTTP(t *testing.T) {
	p := newPipeline(t)
	k := p.startGreetings(t)
	in := p.APIIntake(0)
	ctx := context.Background()
	ada, _ := decodeGreeting([]byte(`{"name":"ada"}`))
	bob, _ := decodeGreeting([]byte(`{"name":"bob"}`))
	key := stacktest.Name("key")

	first := in.Submit(ctx, k, p.tenant, key, ada, 0)
	again := in.Submit(ctx, k, p.tenant, key, ada, 0)
	if first.Kind != intake.Created || first.Status != 202 || !strings.HasPrefix(first.ID, "grt_") {
		t.Fatalf("first: %v %d %s (%v); want Created, 202, grt_...", first.Kind, first.Status, first.ID, first.Err)
	}
	if again.Kind != intake.Replayed || again.ID != first.ID || again.Status != first.Status || !bytes.Equal(again.Body, first.Body) {
		t.Errorf("again: %v %s %d %s; want Replayed %s %d %s", again.Kind, again.ID, again.Status, again.Body, first.ID, first.Status, first.Body)
	}
	if other := in.Submit(ctx, k, p.tenant, key, bob, 0); other.Kind != intake.Mismatch {
		t.Errorf("another body with the key: %v, want Mismatch", other.Kind)
	}

	orderReq, err := orders.DecodeRequest([]byte(orderJSON))
	if err != nil {
		t.Fatal(err)
	}
	placed := in.Place(ctx, p.tenant, key, orderReq, 0)
	if placed.Kind != intake.Created || placed.ID == first.ID {
		t.Fatalf("an order with the greeting's key: %v %s (%v); want a new order", placed.Kind, placed.ID, placed.Err)
	}
	gwf := identity.WorkflowID(greetingKind, p.tenant, identity.FromHTTP, key)
	owf := order.WorkflowID(p.tenant, order.FromHTTP, key)
	if gwf == owf || k.PublicID(gwf) != first.ID || order.IDFor(owf) != placed.ID {
		t.Fatalf("IDs: greeting %s (%s), order %s (%s)", gwf, first.ID, owf, placed.ID)
	}
	if g, o := describe(t, p.Temporal, gwf), describe(t, p.Temporal, owf); g != greetWorkflow || o == greetWorkflow {
		t.Errorf("workflow types: %s under the greeting's ID, %s under the order's", g, o)
	}
	oneRun(t, p.Temporal, gwf)
	var said string
	if err := p.Temporal.GetWorkflow(ctx, gwf, "").Get(ctx, &said); err != nil || said != "hello, ada" {
		t.Errorf("greeting = %q, %v", said, err)
	}
	var keys int
	if err := p.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE tenant = $1 AND key = ANY($2)`,
		p.tenant, []string{identity.StoredKey(greetingKind, key), key}).Scan(&keys); err != nil || keys != 2 {
		t.Errorf("idempotency_keys rows of the key = %d (%v), want 2: one per kind", keys, err)
	}

	// Prefer: wait, with no Update-with-Start of its own: the run's end answers
	// 201. The longest wait (30 s): beside the other lanes a run took over 10 s.
	waited := in.Submit(ctx, k, p.tenant, stacktest.Name("key"), ada, 30*time.Second)
	if waited.Kind != intake.Created || waited.Status != 201 || !bytes.Contains(waited.Body, []byte(`"greeting":"hello, ada"`)) {
		t.Errorf("waited: %v %d %s (%v); want Created 201 with the greeting", waited.Kind, waited.Status, waited.Body, waited.Err)
	}
}

// The same kind over Kafka, through a real consumer: a plain event twice is one
// workflow, a CloudEvent of the kind's type is another, a bad request is a dead
// letter and no workflow, and an order with the same eventId is an order.
func TestAThirdKindOverKafka(t *testing.T) {
	p := newPipeline(t)
	k := p.startGreetings(t)
	plain := func(id, greeting string) []byte {
		return []byte(fmt.Sprintf(`{"eventId":%q,"tenant":%q,"greeting":%s}`, id, p.tenant, greeting))
	}
	ce := kafka.Message{Key: []byte("c"), Value: []byte(`{"name":"grace"}`), Headers: []kafka.Header{
		{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("c1")}, {Key: "ce_source", Value: []byte("/test/greeter")},
		{Key: "ce_type", Value: []byte(greetingRequested)}, {Key: "ce_tenant", Value: []byte(p.tenant)}, {Key: "content-type", Value: []byte("application/json")}}}
	poison := []kafka.Message{
		{Key: []byte("p"), Value: plain("e2", `{"name":""}`)},
		{Key: []byte("p"), Value: plain("e3", `{"name":"ada","mood":"sunny"}`)},
	}
	p.produce(t,
		kafka.Message{Key: []byte("a"), Value: plain("e1", `{"name":"ada"}`)},
		kafka.Message{Key: []byte("b"), Value: plain("e1", `{"name":"ada"}`)},
		ce, poison[0], poison[1],
		kafka.Message{Key: []byte("o"), Value: event("e1", p.tenant)}, // an order, with the greeting's eventId
	)
	reg, stop := p.runConsumerOf(t, k)
	// A committed offset is a settled message: started, a duplicate, or dead-lettered.
	stacktest.Eventually(t, 60*time.Second, "every event to be settled and committed", func() bool { return len(p.lagging(t)) == 0 })
	stop()
	if n := p.processed(t); n != 3 {
		t.Fatalf("processed events = %d, want 3: two greetings and an order", n)
	}
	dead := p.deadLetters(t, len(poison))

	metrics := stacktest.MetricsText(reg)
	for name, want := range map[string]float64{"orderflow_consumer_workflow_starts_total": 3,
		"orderflow_consumer_duplicates_total": 1, "orderflow_consumer_dead_lettered_total": 2} {
		if got := stacktest.Metric(t, metrics, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	plainWF := identity.WorkflowID(greetingKind, p.tenant, identity.FromEvent, "e1")
	ceWF := identity.WorkflowID(greetingKind, p.tenant, identity.FromCloudEvent, identity.CloudEventKey("/test/greeter", "c1"))
	orderWF := order.WorkflowID(p.tenant, order.FromEvent, "e1")
	for wf, want := range map[string]string{plainWF: "hello, ada", ceWF: "hello, grace"} {
		oneRun(t, p.Temporal, wf)
		var said string
		if err := p.Temporal.GetWorkflow(context.Background(), wf, "").Get(context.Background(), &said); err != nil || said != want {
			t.Errorf("%s said %q (%v), want %q", wf, said, err, want)
		}
	}
	oneRun(t, p.Temporal, orderWF)
	if typ := describe(t, p.Temporal, orderWF); typ == greetWorkflow {
		t.Errorf("the order event started a %s", typ)
	}
	for _, id := range []string{"e2", "e3"} {
		wf := identity.WorkflowID(greetingKind, p.tenant, identity.FromEvent, id)
		var missing *serviceerror.NotFound
		if _, err := p.Temporal.DescribeWorkflow(context.Background(), wf, ""); !errors.As(err, &missing) {
			t.Errorf("%s: %v; want no workflow for a bad request", wf, err)
		}
	}
	rows, err := p.Pool.Query(context.Background(), `SELECT event_id FROM processed_events WHERE consumer_group = $1 ORDER BY event_id`, p.group)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, id)
	}
	rows.Close()
	wantStored := []string{"e1", "greeting ce " + identity.CloudEventKey("/test/greeter", "c1"), "greeting e1"}
	if fmt.Sprint(stored) != fmt.Sprint(wantStored) {
		t.Errorf("processed_events = %q, want %q (events scoped per kind)", stored, wantStored)
	}

	want := map[string]string{string(poison[0].Value): "greeting.name", string(poison[1].Value): "greeting.mood"}
	for i, m := range dead {
		value, err := p.Codec.Open(m.Value)
		field, ok := want[string(value)]
		if err != nil || !ok || !strings.Contains(stacktest.Header(m, consumer.HeaderError), field) ||
			stacktest.Header(m, consumer.HeaderTopic) != p.requests || stacktest.Header(m, consumer.HeaderOffset) == "" {
			t.Errorf("dead letter %d: %q (%v), headers %v", i, value, err, m.Headers)
		}
		delete(want, string(value))
	}
}
