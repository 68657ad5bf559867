//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// waited places n orders of a tenant one after another with Prefer: wait, as a
// checkout does, and returns how long each took to answer PAID. A 503 (the
// workflow engine did not take the start in time, on a machine the lanes keep
// busy) is sent again with the same Idempotency-Key a second later, as a
// client does; the order's time counts from its first request.
func (r *rig) waited(t *testing.T, apiKey, prefix string, n int) []time.Duration {
	t.Helper()
	var took []time.Duration
	for i := range n {
		began := time.Now()
		status, body := r.waitedOnce(t, apiKey, fmt.Sprintf("%s-%d", prefix, i))
		for retries := 0; status == http.StatusServiceUnavailable && retries < 5; retries++ {
			time.Sleep(time.Second)
			status, body = r.waitedOnce(t, apiKey, fmt.Sprintf("%s-%d", prefix, i))
		}
		var o struct {
			ID     string
			Status order.Status
		}
		if json.Unmarshal(body, &o) != nil || (status != http.StatusCreated && status != http.StatusAccepted) {
			t.Fatalf("POST %s-%d: %d %s", prefix, i, status, body)
		}
		if status == http.StatusAccepted {
			// The API's wait ended first (a saturated machine): the client reads
			// the order until it is paid, and its time counts to then.
			r.waitStatus(t, o.ID, order.StatusPaid, 2*time.Minute)
			o.Status = order.StatusPaid
		}
		took = append(took, time.Since(began))
		if o.Status != order.StatusPaid {
			t.Fatalf("POST %s-%d: %d %s", prefix, i, status, body)
		}
	}
	return took
}

// waitedOnce sends one POST of an order with Prefer: wait.
func (r *rig) waitedOnce(t *testing.T, apiKey, key string) (int, []byte) {
	t.Helper()
	a, err := r.send(apiKey, key, orderJSON, "wait=60")
	if err != nil {
		t.Fatalf("POST %s: %v", key, err)
	}
	return a.status, a.body
}

// otherTenant makes a second tenant, starts the rig's worker and API, and
// places three of the tenant's orders with Prefer: wait; it returns its key.
func (r *rig) otherTenant(t *testing.T) string {
	t.Helper()
	key, err := apikeys.New(r.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), stacktest.Name("tenant"))
	if err != nil {
		t.Fatal(err)
	}
	r.startWorker(t, nil)
	r.startAPI(t)
	r.waited(t, key, "warm", 3)
	return key
}

// quantile of durations, by the nearest rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// Tenant A sends 2,000 orders as Kafka events at once (500 on the cluster
// profile); tenant B, on the same workers, places 20 orders one after another
// with Prefer: wait, at rest and then during A's flood. Each order's tasks carry
// its tenant as fairness key, so Temporal's matching serves B's tasks beside A's
// backlog instead of behind it: B's p50 during the flood does not grow with A's
// backlog. Before, B's orders waited behind all of A's (26 s against 86 ms), and
// here B's first order is not paid within its 30 s wait.
func TestChaosOneTenantsFloodNeverDelaysAnothers(t *testing.T) {
	const n = 20
	flood := 2000
	r := newRig(t)
	if r.Env["ORDERFLOW_STACK_PROFILE"] == "cluster" {
		// The secured cluster pays about 3.5 orders a second on two cores: a
		// flood of 500 is a backlog of minutes, as 2,000 is on the dev profile.
		flood = 500
	}
	otherKey := r.otherTenant(t)
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
	// B starts once A's backlog is in Temporal's queue. On a machine the lanes
	// keep busy the cluster's Temporal starts A's workflows slowly, so the wait
	// lasts while they keep starting.
	started := func() int {
		return r.count(t, `SELECT count(*) FROM processed_events WHERE consumer_group = $1`, r.group)
	}
	if err := stacktest.Progressing(time.Minute, 5*time.Minute, flood/4, started); err != nil {
		t.Fatalf("a backlog of A's workflows: %v", err)
	}
	during := r.waited(t, otherKey, "flood", n)
	r.ledger(t, fmt.Sprintf("fairness: tenant A's %d events at once", flood))
	took := time.Since(began)
	settledA := r.paidOf(t, r.tenant)
	line := fmt.Sprintf("%-44s B at rest p50=%s p99=%s; during A's flood p50=%s p99=%s (%.1fx); A: %d paid in %s (%.1f orders/s)",
		"fairness: one tenant's flood, another's orders", quantile(rest, 0.5).Round(time.Millisecond), quantile(rest, 0.99).Round(time.Millisecond),
		quantile(during, 0.5).Round(time.Millisecond), quantile(during, 0.99).Round(time.Millisecond),
		float64(quantile(during, 0.5))/float64(quantile(rest, 0.5)), settledA, took.Round(time.Second), float64(settledA)/took.Seconds())
	t.Log(line)
	appendSummary(line)
	// Without fairness keys B's orders wait behind A's backlog: the first is still
	// PENDING when its 30 s wait ends. With them B's orders are served beside it,
	// so B's p50 does not grow with the backlog: here it is under 1 % of the
	// time A's flood takes to be paid. Against B at rest it is 3 to 4.5 times on
	// the dev profile and 7 times on the cluster profile, on two cores that A's
	// flood keeps busy (the figures are in the summary line).
	if quantile(during, 0.5) > took/20 {
		t.Fatalf("B's p50 during A's flood is %s, over 5 %% of the %s A's flood took: B waited behind it", quantile(during, 0.5), took.Round(time.Second))
	}
}

// Anonymous callers send well-formed API keys nobody issued, as fast as 2,500
// connections can, for 20 s, while a tenant's real key lists its orders ten
// times a second and places an order each second. The key's cache entry
// expires every 2 s during the flood (API_KEY_CACHE_TTL): each time, it is
// looked up again in a lane of its own, never behind the made-up ids. Every one
// of the tenant's requests succeeds. Before, a key whose entry expired during
// such a flood queued behind the unknown ids and got 503.
func TestChaosAnonymousFloodNeverLocksAKnownKeyOut(t *testing.T) {
	const conns, d = 2500, 20 * time.Second
	r := newRig(t)
	r.apiEnv = map[string]string{"API_KEY_CACHE_TTL": "2s"}
	r.startWorker(t, nil)
	r.startAPI(t)
	r.order(t, "before-flood") // the key is in use before the flood begins
	stop := time.Now().Add(d)
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	f := madeUpKeys(&http.Client{Transport: tr, Timeout: 10 * time.Second}, "http://"+r.apiAddr, conns, stop)
	var lists, failed int
	for i := 0; time.Now().Before(stop); i++ {
		req, _ := http.NewRequest(http.MethodGet, "http://"+r.apiAddr+"/v1/orders?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+r.apiKey)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		lists++
		if err != nil || resp.StatusCode != http.StatusOK {
			failed++
			if err == nil {
				t.Logf("the real key's list: %d", resp.StatusCode)
			}
		}
		if resp != nil {
			resp.Body.Close()
		}
		if i%10 == 0 {
			r.order(t, fmt.Sprintf("during-flood-%d", i/10))
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.wg.Wait()
	r.ledger(t, fmt.Sprintf("anonymous flood: %d made-up keys in %s (%d refused, %d busy)", f.sent.Load(), d, f.refused.Load(), f.busy.Load()))
	t.Logf("the real key: %d lists, %d failed", lists, failed)
	if failed > 0 {
		t.Fatalf("%d of the real key's %d requests failed during the flood", failed, lists)
	}
}

// With the fleet's backlog bound on (1 s, floor 20), tenant A floods the API
// with POSTs from four clients, far more than the fleet closes in the second
// it accepts, and hears 503 with Retry-After for the excess; during the flood
// tenant B places 20 orders one after another with Prefer: wait. The bound is
// shared by the tenants' weights, so B, under its share, is never refused for
// A's flood. Every POST A got 2xx for is paid once and a refused one started
// nothing (the ledger). Before the shares, A's open workflows filled the bound
// and B heard 503 as A did.
func TestChaosAFloodOverTheBacklogBoundNeverShedsAnotherTenant(t *testing.T) {
	r := newRig(t)
	r.apiEnv = map[string]string{"BACKLOG_ACCEPT": "1s", "BACKLOG_FLOOR": "20"}
	otherKey := r.otherTenant(t) // the fleet closes work: the bound is on
	stop := make(chan struct{})
	var shedA atomic.Int64
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() { r.floodUntil(t, stop, fmt.Sprintf("flood-%d", c), func(string) { shedA.Add(1) }) })
	}
	end := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer end()
	stacktest.Eventually(t, time.Minute, "A's flood refused over the backlog bound", func() bool { return shedA.Load() > 0 })
	var shedB int
	for i := range 20 {
		status, body := r.waitedOnce(t, otherKey, fmt.Sprintf("during-%d", i))
		if status == http.StatusServiceUnavailable && strings.Contains(string(body), backlogShed) {
			shedB++
		}
	}
	end()
	t.Logf("A refused over the bound %d times; B %d of 20", shedA.Load(), shedB)
	if shedB > 0 {
		t.Fatalf("B, under its share of the bound, was refused %d of 20 times for A's flood", shedB)
	}
	r.ledger(t, "backlog bound: A's flood of POSTs, B beside it")
}

// The fleet's only worker freezes (SIGSTOP) after it has closed work, and the
// tenant goes on POSTing orders without wait. Ten seconds without a close used to
// read as no fleet at work: everything was admitted, the open workflows grew
// with every POST, and each one's wait ran out long before the fleet moved
// again. A fleet that closed work in the last five minutes and closes none has
// stalled: past the floor a POST hears 503 with Retry-After 30 and starts
// nothing. Once the worker goes on (SIGCONT), every POST that got 2xx is paid
// once (the ledger).
func TestChaosAStalledFleetShedsInsteadOfAdmittingAll(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.apiEnv = map[string]string{"BACKLOG_ACCEPT": "1s", "BACKLOG_FLOOR": "20"}
	w := r.startWorker(t, nil)
	r.startAPI(t)
	r.waited(t, r.apiKey, "warm", 3) // the fleet closes work: the bound is on
	for i := range 3 {
		r.expect(r.workflowOf(fmt.Sprintf("warm-%d", i)))
	}
	w.Signal(syscall.SIGSTOP)
	froze := time.Now()
	stop, admittedc := make(chan struct{}), make(chan int, 1)
	var stalled atomic.Bool
	go func() {
		admittedc <- r.floodUntil(t, stop, "stalled", func(retryAfter string) {
			if retryAfter == "30" {
				stalled.Store(true)
			}
		})
	}()
	admitted := sync.OnceValue(func() int { close(stop); return <-admittedc })
	defer admitted()
	stacktest.Eventually(t, time.Minute, "a 503 with Retry-After 30 after the fleet froze", stalled.Load)
	// Well past the 10 s the closing rate is read over: it reads 0 by then.
	time.Sleep(time.Until(froze.Add(25 * time.Second)))
	t.Logf("admitted %d while the fleet was frozen", admitted())
	if admitted() > 60 {
		t.Fatalf("%d POSTs admitted while the fleet was frozen, over a floor of 20", admitted())
	}
	w.Signal(syscall.SIGCONT)
	r.ledger(t, "a stalled fleet: POSTs while its worker was frozen")
}

// backlogShed is in the detail of a 503 for the fleet's backlog.
const backlogShed = "the fleet has more work open"

// floodUntil POSTs the rig tenant's orders without wait, one after another
// (keys prefix-N), until stop, and returns how many were admitted; each admitted
// is expected in the ledger, each refused for the backlog goes to shed with its
// Retry-After and its key is left, and another 503 (a busy machine) is sent
// again with its key.
func (r *rig) floodUntil(t *testing.T, stop <-chan struct{}, prefix string, shed func(retryAfter string)) (admitted int) {
	for n := 0; ; n++ {
		key := fmt.Sprintf("%s-%d", prefix, n)
		for {
			select {
			case <-stop:
				return admitted
			default:
			}
			a, err := r.send(r.apiKey, key, orderJSON, "")
			if err != nil {
				t.Errorf("POST %s: %v", key, err)
				return admitted
			}
			switch status, body := a.status, a.body; {
			case status == http.StatusCreated || status == http.StatusAccepted:
				admitted++
				r.expect(r.workflowOf(key))
			case status == http.StatusServiceUnavailable && strings.Contains(string(body), backlogShed):
				shed(a.header.Get("Retry-After"))
			case status == http.StatusServiceUnavailable:
				time.Sleep(100 * time.Millisecond)
				continue
			default:
				t.Errorf("POST %s: %d %s", key, status, body)
				return admitted
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}
