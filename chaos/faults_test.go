//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// traffic runs two HTTP clients and one Kafka producer for d; wait returns when
// every request they made has been accepted.
func (r *rig) traffic(t *testing.T, name string, d time.Duration) (wait func()) {
	var wg sync.WaitGroup
	stopAt := time.Now().Add(d)
	for c := range 2 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stopAt); i++ {
				r.order(t, fmt.Sprintf("%s-http%d-%d", name, c, i))
				time.Sleep(r.httpGap)
			}
		})
	}
	wg.Go(func() {
		w := r.writer()
		defer w.Close()
		for i := 0; time.Now().Before(stopAt); i++ {
			id := fmt.Sprintf("%s-evt-%d", name, i)
			r.produce(t, w, id, []byte(id))
			time.Sleep(r.eventGap)
		}
	})
	return wg.Wait
}

// flowing waits until the traffic has paid n of the rig's orders: a fault then
// hits a service that works end to end, as soon as it does.
func (r *rig) flowing(t *testing.T, n int) {
	t.Helper()
	stacktest.Eventually(t, time.Minute, fmt.Sprintf("%d orders paid under traffic", n), func() bool {
		return r.paidOf(t, r.tenant) >= n
	})
}

// committed sums the group's committed offsets over the requests topic.
func (r *rig) committed(t *testing.T) int64 {
	t.Helper()
	var sum int64
	for _, o := range stacktest.Committed(t, r.Kafka.Client(), r.group, r.requests, 4) {
		sum += o
	}
	return sum
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestChaosTemporalRestart(t *testing.T) {
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	wait := r.traffic(t, "temporal", 20*time.Second)
	r.flowing(t, 5)

	stacktest.Service(t, "stop", "temporal")
	began := time.Now()
	code, retryAfter, err := r.post(stacktest.Name("probe"))
	took := time.Since(began)
	if err != nil || code != http.StatusServiceUnavailable || retryAfter < 1 || took > 15*time.Second {
		t.Errorf("POST while Temporal is down: %d, Retry-After %d, %v after %s; want 503 with Retry-After within 15s", code, retryAfter, err, took)
	}
	time.Sleep(3 * time.Second) // in-flight starts fail; nothing settles from here on
	before := r.committed(t)
	time.Sleep(4 * time.Second)
	after := r.committed(t)
	ready, apiReady := status(t, "http://"+r.opsAddr+"/readyz"), status(t, "http://"+r.apiOpsAddr+"/readyz")
	stacktest.Service(t, "start", "temporal")
	t.Logf("Temporal down: POST answered %d in %s; committed offsets %d -> %d; worker readyz %d", code, took.Round(time.Millisecond), before, after, ready)
	if after != before {
		t.Errorf("offsets moved while Temporal was down: %d -> %d", before, after)
	}
	if ready != http.StatusServiceUnavailable {
		t.Errorf("worker /readyz = %d while Temporal was down, want 503", ready)
	}
	if apiReady != http.StatusOK {
		t.Errorf("API /readyz = %d while Temporal was down, want 200: it answers 503 with Retry-After itself", apiReady)
	}
	wait()
	r.ledger(t, "temporal stopped+started under traffic")
}

// A stack server is restarted while HTTP and Kafka traffic flows.
func TestChaosServerRestart(t *testing.T) {
	for _, tc := range []struct {
		service string
		traffic time.Duration
		fault   string
	}{
		{"postgres", 15 * time.Second, "postgres restarted under traffic"},
		{"kafka", 20 * time.Second, "kafka broker restarted under traffic"},
	} {
		t.Run(tc.service, func(t *testing.T) {
			r := newRig(t)
			r.startWorker(t, nil)
			r.startAPI(t)
			wait := r.traffic(t, tc.service, tc.traffic)
			r.flowing(t, 5)
			stacktest.Service(t, "restart", tc.service)
			wait()
			r.ledger(t, tc.fault)
		})
	}
}

// The worker is killed with SIGKILL at four points of a payment and restarted.
func TestChaosWorkerKilledDuringCharge(t *testing.T) {
	t.Parallel()
	rows := func(r *rig, query string, args ...any) int {
		var n int
		_ = r.Pool.QueryRow(context.Background(), query, args...).Scan(&n)
		return n
	}
	points := []struct {
		name   string
		faults sandbox.Faults
		at     func(r *rig, wf string) bool
	}{
		{"between creating the intent and confirming it", sandbox.Faults{Only: "confirm", Unavailable: 1000}, func(r *rig, wf string) bool {
			return rows(r, `SELECT count(*) FROM payments WHERE idempotency_key = $1 AND status = 'created'`, order.PaymentKey(wf, "intent", 0)) == 1
		}},
		{"between a failed confirm and the read of its intent", sandbox.Faults{Only: "confirm", FailBefore: 1}, func(r *rig, wf string) bool {
			return r.Sim.Requests(order.PaymentKey(wf, "confirm", 0)) == 1 // answered 500, nothing charged
		}},
		{"while the provider was confirming", sandbox.Faults{Only: "confirm", LatencyMS: 3000, Slow: 1}, func(r *rig, wf string) bool {
			return r.Sim.InFlight() == 1
		}},
		{"after the confirm activity completed", sandbox.Faults{}, func(r *rig, wf string) bool {
			return rows(r, `SELECT count(*) FROM payments WHERE idempotency_key = $1 AND status = 'succeeded'`, order.PaymentKey(wf, "confirm", 0)) == 1
		}},
	}
	for _, pt := range points {
		t.Run(pt.name, func(t *testing.T) {
			r := newRig(t)
			r.Sim.SetFaults(pt.faults)
			worker := r.startWorker(t, nil)
			r.startAPI(t)
			key := stacktest.Name("k")
			wf := order.WorkflowID(r.tenant, order.FromHTTP, key)
			r.order(t, key)
			stacktest.Eventually(t, 30*time.Second, "the kill point", func() bool { return pt.at(r, wf) })
			worker.Kill(t)
			charged := len(r.Sim.ChargesForOrder(order.IDFor(wf)))
			r.Sim.SetFaults(sandbox.Faults{})
			r.startWorker(t, nil)
			r.ledger(t, fmt.Sprintf("worker SIGKILL %s (charges at kill: %d, confirms: %d)", pt.name, charged, r.Sim.Requests(order.PaymentKey(wf, "confirm", 0))))
		})
	}
}

func TestChaosSIGTERMUnderLoad(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.Sim.SetFaults(sandbox.Faults{LatencyMS: 200})
	worker := r.startWorker(t, nil)
	api := r.startAPI(t)
	wait := r.traffic(t, "sigterm", 15*time.Second)
	r.flowing(t, 5)
	began := time.Now()
	worker.Signal(syscall.SIGTERM)
	api.Signal(syscall.SIGTERM)
	wc, ac := worker.Wait(t, 30*time.Second), api.Wait(t, 30*time.Second)
	took := time.Since(began)
	t.Logf("SIGTERM under load: worker exit %d, api exit %d, both gone after %s", wc, ac, took.Round(time.Millisecond))
	if wc != 0 || ac != 0 || took > 25*time.Second {
		t.Errorf("exit codes %d/%d after %s: want 0/0 within 25s", wc, ac, took)
	}
	r.startWorker(t, nil)
	r.startAPI(t)
	wait()
	r.ledger(t, fmt.Sprintf("worker+api SIGTERM under load (drain %s)", took.Round(time.Millisecond)))
}

func TestChaosProviderSlowAnd5xx(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	// One confirm slower than the client's timeout: the attempt gives up while the
	// provider goes on and charges; the retry finds the key in use, and the intent
	// processing, then succeeded.
	r.Sim.SetFaults(sandbox.Faults{Only: "confirm", LatencyMS: 2500, Slow: 1})
	r.startWorker(t, map[string]string{"PAYMENTS_TIMEOUT": "1s"})
	r.startAPI(t)
	for i := range 3 {
		r.order(t, fmt.Sprintf("slow-%d", i))
	}
	stacktest.Eventually(t, 60*time.Second, "the slow orders to be paid", func() bool {
		return r.paidOf(t, r.tenant) == 3
	})
	r.Sim.SetFaults(sandbox.Faults{FailBefore: 12})
	for i := range 5 {
		r.order(t, fmt.Sprintf("5xx-%d", i))
	}
	r.ledger(t, "provider slower than timeout once, then 12x 5xx")
}

// proxy is a TCP proxy in front of the payment provider that can stall (accept
// and hold) or drop (reset) connections.
type proxy struct {
	ln     net.Listener
	target string
	mode   atomic.Value // "pass", "stall", "drop"
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.mode.Store("pass")
	t.Cleanup(func() { ln.Close(); p.set("drop") })
	go p.serve()
	return p
}

func (p *proxy) set(mode string) {
	p.mode.Store(mode)
	if mode == "drop" {
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
		p.mu.Unlock()
	}
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go p.handle(c)
	}
}

func (p *proxy) handle(c net.Conn) {
	for p.mode.Load() == "stall" {
		time.Sleep(50 * time.Millisecond) // hold the connection, forward nothing
	}
	if p.mode.Load() == "drop" {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

func TestChaosNetworkCutToProvider(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	u, _ := url.Parse(r.SimURL)
	px := newProxy(t, u.Host)
	r.startWorker(t, map[string]string{"PAYMENTS_URL": "http://" + px.ln.Addr().String(), "PAYMENTS_TIMEOUT": "2s"})
	r.startAPI(t)
	wait := r.traffic(t, "netcut", 16*time.Second)
	r.flowing(t, 5)
	px.set("stall")
	time.Sleep(5 * time.Second)
	px.set("drop")
	time.Sleep(5 * time.Second)
	px.set("pass")
	wait()
	r.ledger(t, "worker->provider network stalled 5s, dropped 5s")
}

func TestChaosDuplicateFloods(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)

	key := stacktest.Name("flood")
	r.expect(order.WorkflowID(r.tenant, order.FromHTTP, key))
	var wg sync.WaitGroup
	var accepted, conflicts atomic.Int64
	for range 100 {
		wg.Go(func() {
			code, _, err := r.post(key)
			switch {
			case err != nil:
				t.Errorf("POST: %v", err)
			case code == 202 || code == 201:
				accepted.Add(1)
			case code == 409:
				conflicts.Add(1)
			default:
				t.Errorf("POST: %d", code)
			}
		})
	}
	wg.Wait()
	r.order(t, key) // the 409s' retry converges on the same order
	t.Logf("100 concurrent identical POSTs: %d accepted, %d told to retry", accepted.Load(), conflicts.Load())

	// The same event ten times over several partitions, while a second worker
	// joins the group and leaves it again (two rebalances).
	eventID := stacktest.Name("evt")
	w := r.writer()
	defer w.Close()
	opsAddr := r.opsAddr
	var second *stacktest.Proc
	for i := range 10 {
		if i == 3 {
			r.opsAddr = stacktest.FreeAddr(t)
			second = r.startWorker(t, nil)
		}
		if i == 7 {
			second.Signal(syscall.SIGTERM)
			if code := second.Wait(t, 30*time.Second); code != 0 {
				t.Errorf("second worker exit %d", code)
			}
		}
		r.produce(t, w, eventID, []byte(fmt.Sprintf("copy-%d", i)))
		time.Sleep(300 * time.Millisecond)
	}
	r.opsAddr = opsAddr
	r.ledger(t, "100 identical POSTs + 1 event x10 across a rebalance")
}

// The provider answers every request 429 for 30 s, as Stripe does to an account
// over its rate limit, while HTTP clients and a producer place orders: a 429 is
// a wait, never a failure. Every order ends PAID with one charge.
func TestChaosProviderRateLimitsForThirtySeconds(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, nil)
	r.startAPI(t)
	r.Sim.SetFaults(sandbox.Faults{RateLimitedMS: 30_000})
	wait := r.traffic(t, "ratelimited", 10*time.Second)
	wait()
	r.ledger(t, fmt.Sprintf("provider 429 for 30s (%d requests answered 429)", r.Sim.RateLimited()))
	if r.Sim.RateLimited() == 0 {
		t.Fatal("the provider answered no request 429: the fault was not caused")
	}
}
