//go:build stack

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/segmentio/kafka-go"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit"
	"github.com/orderflow/orderflow/testkit/stacktest"

	"example.com/shipments/carrier"
	"example.com/shipments/shipment"
)

// bookingJSON is a shipment request: its reference and weight.
const bookingJSON = `{"reference":%q,"address":"1 Quay Street, Bristol","weight_grams":%d}`

// slowBooking is how long the slow carrier takes to book a parcel.
const slowBooking = 3 * time.Second

// stack is the example on the real stack: its binary's worker and API as child
// processes on a task queue, topics and consumer group of their own, the fake
// carrier in the test process, and a tenant with an API key.
type stack struct {
	env        map[string]string
	bin        string
	pool       *pgxpool.Pool
	temporal   client.Client
	kafka      kafkaclient.Cluster
	carrier    *carrier.Server // books at once
	carrierURL string
	slow       *carrier.Server // takes slowBooking to book: a worker dies meanwhile
	slowURL    string
	tenant     string
	apiKey     string
	queue      string
	requests   string
	dlq        string
	events     string
	group      string
	apiURL     string
	worker     *stacktest.Proc
	http       *http.Client
}

func newStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{env: stacktest.Env(t), pool: stacktest.Pool(t), temporal: stacktest.Temporal(t), kafka: stacktest.Kafka(t),
		carrier: carrier.New(0), slow: carrier.New(slowBooking), tenant: stacktest.Name("tenant"), queue: stacktest.Name("shipments"),
		group: stacktest.Name("group"), http: &http.Client{Timeout: 30 * time.Second}}
	s.requests, s.dlq, s.events = stacktest.Topic(t, 1), stacktest.Topic(t, 1), stacktest.Topic(t, 1)
	s.carrierURL, s.slowURL = serve(t, s.carrier), serve(t, s.slow)
	s.bin = build(t)
	s.apiKey = s.createKey(t)
	s.worker = s.startWorker(t, s.carrierURL)
	s.startAPI(t)
	return s
}

// serve runs c as an HTTP server until the test ends and returns its URL.
func serve(t *testing.T, c *carrier.Server) string {
	t.Helper()
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// build builds the example's binary, once for the test run.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "shipments")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// createKey makes the tenant's API key with the binary, as an operator does.
func (s *stack) createKey(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(s.bin, "api", "keys", "create", "--tenant", s.tenant)
	cmd.Env = environ(testkit.Connections(s.env, nil))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output() // the key, shown once: never logged
	key := strings.TrimSpace(string(out))
	if err != nil || key == "" || strings.Contains(key, "\n") {
		t.Fatalf("api keys create: %v\n%s", err, stderr.Bytes())
	}
	return key
}

func environ(env map[string]string) []string {
	out := os.Environ()
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// startWorker runs `shipments worker` booking with the carrier at carrierURL.
func (s *stack) startWorker(t *testing.T, carrierURL string) *stacktest.Proc {
	t.Helper()
	ops := stacktest.FreeAddr(t)
	env := testkit.Connections(s.env, map[string]string{"TASK_QUEUE": s.queue, "REQUESTS_TOPIC": s.requests,
		"DLQ_TOPIC": s.dlq, "EVENTS_TOPIC": s.events, "CONSUMER_GROUP": s.group, "OPS_ADDR": ops,
		"WORKER_STOP_TIMEOUT": "5s", "CARRIER_URL": carrierURL})
	p := stacktest.Start(t, s.bin, env, "worker")
	if err := p.WaitReady("http://"+ops+"/healthz", time.Minute); err != nil {
		t.Fatal(err)
	}
	return p
}

// startAPI runs `shipments api` on the stack's task queue.
func (s *stack) startAPI(t *testing.T) {
	t.Helper()
	addr, ops := stacktest.FreeAddr(t), stacktest.FreeAddr(t)
	env := testkit.Connections(s.env, map[string]string{"TASK_QUEUE": s.queue, "API_ADDR": addr, "OPS_ADDR": ops, "DRAIN_DELAY": "0s"})
	p := stacktest.Start(t, s.bin, env, "api")
	if err := p.WaitReady("http://"+ops+"/readyz", time.Minute); err != nil {
		t.Fatal(err)
	}
	s.apiURL = "http://" + addr
}

// reply is an answer of the API: its status, headers and shipment.
type reply struct {
	status int
	header http.Header
	view   shipment.View
}

// post sends POST /v1/shipments with key and body; wait > 0 asks Prefer: wait.
func (s *stack) post(t *testing.T, key, body string, wait int) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.apiURL+"/v1/shipments", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if wait > 0 {
		req.Header.Set("Prefer", fmt.Sprintf("wait=%d", wait))
	}
	return s.do(t, req)
}

// get sends GET /v1/shipments/{id}.
func (s *stack) get(t *testing.T, id string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.apiURL+"/v1/shipments/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.do(t, req)
}

func (s *stack) do(t *testing.T, req *http.Request) reply {
	t.Helper()
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := reply{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode < 300 {
		if err := json.Unmarshal(body, &out.view); err != nil {
			t.Fatalf("%s %s: %d %s: %v", req.Method, req.URL.Path, resp.StatusCode, body, err)
		}
	}
	return out
}

// booked waits for the shipment to be BOOKED and returns it.
func (s *stack) booked(t *testing.T, id string, within time.Duration) shipment.View {
	t.Helper()
	var last reply
	stacktest.Eventually(t, within, id+" to be BOOKED", func() bool {
		last = s.get(t, id)
		return last.status == http.StatusOK && last.view.Status == shipment.StatusBooked
	})
	if last.view.BookingID == "" {
		t.Errorf("%s is BOOKED without a booking_id", id)
	}
	return last.view
}

// bookings counts the carrier's bookings of the shipment id, on every carrier given.
func bookings(id string, carriers ...*carrier.Server) int {
	n := 0
	for _, c := range carriers {
		for _, b := range c.Bookings() {
			if b.Reference == id {
				n++
			}
		}
	}
	return n
}

// count runs a count query.
func (s *stack) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// oneWorkflow checks that workflowID has exactly one run and one record.
func (s *stack) oneWorkflow(t *testing.T, workflowID string) {
	t.Helper()
	stacktest.Eventually(t, 30*time.Second, "visibility of "+workflowID, func() bool {
		return stacktest.Runs(t, s.temporal, workflowID) > 0
	})
	if n := stacktest.Runs(t, s.temporal, workflowID); n != 1 {
		t.Errorf("%s: %d runs, want 1", workflowID, n)
	}
	if n := s.count(t, `SELECT count(*) FROM kind_records WHERE tenant = $1 AND kind = $2 AND workflow_id = $3`,
		s.tenant, shipment.KindName, workflowID); n != 1 {
		t.Errorf("%s: %d records, want 1", workflowID, n)
	}
}

// produce writes each value to the requests topic, retrying until the broker has it.
func (s *stack) produce(t *testing.T, values ...string) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(s.kafka.Brokers...), Topic: s.requests, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: s.kafka.Transport(), MaxAttempts: 20, WriteBackoffMax: time.Second}
	defer w.Close()
	for _, v := range values {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte(v)})
		cancel()
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// settled waits until the group has committed every message of the requests
// topic: each one started, found a duplicate, or dead-lettered.
func (s *stack) settled(t *testing.T) {
	t.Helper()
	stacktest.Eventually(t, time.Minute, "every event to be settled and committed", func() bool {
		resp, err := s.kafka.Client().OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: s.group,
			Topics: map[string][]int{s.requests: {0}}})
		if err != nil || len(resp.Topics[s.requests]) != 1 {
			return false
		}
		return resp.Topics[s.requests][0].CommittedOffset == stacktest.EndOffset(t, s.requests, 0)
	})
}

// event is an envelope of the tenant's with a shipment member.
func (s *stack) event(eventID, member string) string {
	return fmt.Sprintf(`{"eventId":%q,"tenant":%q,"shipment":%s}`, eventID, s.tenant, member)
}

func TestShipmentsOnTheStack(t *testing.T) {
	s := newStack(t)
	var ids []string // every shipment booked, for the ledger at the end
	t.Run("keyed start", func(t *testing.T) { ids = append(ids, s.keyedStart(t)...) })
	t.Run("redelivered event", func(t *testing.T) { ids = append(ids, s.redelivered(t)) })
	t.Run("poison letter", s.poison)
	t.Run("worker killed mid-booking", func(t *testing.T) { ids = append(ids, s.killedMidBooking(t)...) })
	if t.Failed() {
		return
	}
	// The ledger: one record per shipment, each BOOKED, and as many bookings.
	records := s.count(t, `SELECT count(*) FROM kind_records WHERE tenant = $1`, s.tenant)
	booked := s.count(t, `SELECT count(*) FROM kind_records WHERE tenant = $1 AND status = $2`, s.tenant, shipment.StatusBooked)
	if records != len(ids) || booked != len(ids) || len(s.carrier.Bookings())+len(s.slow.Bookings()) != len(ids) {
		t.Errorf("shipments=%d records=%d booked=%d bookings=%d+%d", len(ids), records, booked,
			len(s.carrier.Bookings()), len(s.slow.Bookings()))
	}
}

// keyedStart: a keyed POST is 202, its retry a replay of it, the key with
// another body 422; Prefer: wait answers 201 BOOKED; one booking each.
func (s *stack) keyedStart(t *testing.T) []string {
	key, body := stacktest.Name("key"), fmt.Sprintf(bookingJSON, "ref-1", 1200)
	first := s.post(t, key, body, 0)
	id := first.view.ID
	if first.status != http.StatusAccepted || !strings.HasPrefix(id, "shp_") || first.header.Get("Location") != "/v1/shipments/"+id {
		t.Fatalf("first POST: %d, Location %q, id %q; want 202 at /v1/shipments/shp_…", first.status, first.header.Get("Location"), id)
	}
	again := s.post(t, key, body, 0)
	if again.status != http.StatusAccepted || again.header.Get("Idempotent-Replayed") != "true" || again.view.ID != id {
		t.Errorf("same POST again: %d, replayed %q, id %q; want 202 replayed %s", again.status,
			again.header.Get("Idempotent-Replayed"), again.view.ID, id)
	}
	if other := s.post(t, key, fmt.Sprintf(bookingJSON, "ref-1", 1300), 0); other.status != http.StatusUnprocessableEntity {
		t.Errorf("the key with another body: %d, want 422", other.status)
	}
	s.booked(t, id, time.Minute)
	waited := s.post(t, stacktest.Name("key"), fmt.Sprintf(bookingJSON, "ref-2", 500), 10)
	if waited.status != http.StatusCreated || waited.view.Status != shipment.StatusBooked || waited.view.BookingID == "" {
		t.Errorf("Prefer: wait=10: %d %+v, want 201 BOOKED with a booking_id", waited.status, waited.view)
	}
	s.oneWorkflow(t, identity.WorkflowID(shipment.KindName, s.tenant, identity.FromHTTP, key))
	for _, shp := range []string{id, waited.view.ID} {
		if n := bookings(shp, s.carrier); n != 1 {
			t.Errorf("%s: %d bookings at the carrier, want 1", shp, n)
		}
	}
	return []string{id, waited.view.ID}
}

// redelivered: one event delivered twice is one workflow and one booking.
func (s *stack) redelivered(t *testing.T) string {
	eventID := stacktest.Name("evt")
	value := s.event(eventID, fmt.Sprintf(bookingJSON, "ref-evt", 800))
	s.produce(t, value, value)
	s.settled(t)
	wf := identity.WorkflowID(shipment.KindName, s.tenant, identity.FromEvent, eventID)
	id := shipment.IDFor(wf)
	s.booked(t, id, time.Minute)
	s.oneWorkflow(t, wf)
	if n := s.count(t, `SELECT count(*) FROM processed_events WHERE consumer_group = $1 AND workflow_id = $2`, s.group, wf); n != 1 {
		t.Errorf("%d processed events of %s, want 1", n, wf)
	}
	if n := bookings(id, s.carrier); n != 1 {
		t.Errorf("%s: %d bookings at the carrier, want 1", id, n)
	}
	return id
}

// letter is a dead letter as `worker dlq list -o json` prints it.
type letter struct {
	Error    string `json:"error"`
	Identity struct {
		Tenant  string `json:"tenant"`
		Kind    string `json:"kind"`
		EventID string `json:"event_id"`
	} `json:"identity"`
}

// poison: a shipment of no weight is one dead letter naming the field, listed
// with its kind by the binary's dlq list, and no workflow.
func (s *stack) poison(t *testing.T) {
	eventID := stacktest.Name("evt")
	s.produce(t, s.event(eventID, fmt.Sprintf(bookingJSON, "ref-poison", 0)))
	s.settled(t)
	dead := stacktest.Messages(t, s.dlq, 1)
	if got := stacktest.Header(dead[0], consumer.HeaderError); !strings.Contains(got, "weight_grams") {
		t.Errorf("dead letter's error %q names no weight_grams", got)
	}
	if n := stacktest.EndOffset(t, s.dlq, 0); n != 1 {
		t.Errorf("%d dead letters, want 1", n)
	}
	wf := identity.WorkflowID(shipment.KindName, s.tenant, identity.FromEvent, eventID)
	var missing *serviceerror.NotFound
	if _, err := s.temporal.DescribeWorkflow(context.Background(), wf, ""); !errors.As(err, &missing) {
		t.Errorf("%s: %v; want no workflow for a poison letter", wf, err)
	}
	cmd := exec.Command(s.bin, "worker", "dlq", "list", "-o", "json")
	cmd.Env = environ(testkit.Connections(s.env, map[string]string{"DLQ_TOPIC": s.dlq}))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dlq list: %v\n%s", err, stderr.Bytes())
	}
	var letters []letter
	if err := json.Unmarshal(out, &letters); err != nil {
		t.Fatalf("dlq list -o json: %v\n%s", err, out)
	}
	if len(letters) != 1 {
		t.Fatalf("dlq list: %d letters, want 1: %s", len(letters), out)
	}
	l := letters[0]
	if l.Identity.Kind != shipment.KindName || l.Identity.Tenant != s.tenant || l.Identity.EventID != eventID ||
		!strings.Contains(l.Error, "weight_grams") {
		t.Errorf("dlq list: %+v; want the shipment event %s of %s, failing on weight_grams", l, eventID, s.tenant)
	}
}

// killedMidBooking: a worker killed while the carrier books is replaced; the
// retry sends the same key, so the shipment is BOOKED with one booking.
func (s *stack) killedMidBooking(t *testing.T) []string {
	s.worker.Kill(t) // the worker that books with the slow carrier is the only one
	first := s.startWorker(t, s.slowURL)
	posted := s.post(t, stacktest.Name("key"), fmt.Sprintf(bookingJSON, "ref-killed", 2500), 0)
	if posted.status != http.StatusAccepted {
		t.Fatalf("POST: %d, want 202", posted.status)
	}
	id := posted.view.ID
	stacktest.Eventually(t, time.Minute, "the carrier to receive the booking", func() bool { return s.slow.Requests() > 0 })
	first.Kill(t)
	if n := len(s.slow.Bookings()); n != 0 {
		t.Fatalf("%d bookings made before the worker was killed: the kill came too late", n)
	}
	s.startWorker(t, s.slowURL)
	// The activity is retried once its start-to-close timeout (30 s) has passed.
	s.booked(t, id, 2*time.Minute)
	if n := s.slow.Requests(); n < 2 {
		t.Errorf("the carrier saw %d booking requests, want a retry", n)
	}
	if n := bookings(id, s.carrier, s.slow); n != 1 {
		t.Errorf("%s: %d bookings at the carrier, want 1", id, n)
	}
	return []string{id}
}
