package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/workflowservice/v1"

	orderflow "github.com/orderflow/orderflow/client"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/tenants/fairness"
	"github.com/orderflow/orderflow/testkit"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker"
	"github.com/orderflow/orderflow/workflows"
)

// soakTimeout is the workers' provider timeout during the soak; the sandbox's
// slow answers take longer, so they time out.
const soakTimeout = 3 * time.Second

// soakPlan is the soak's schedule of faults.
type soakPlan struct {
	For, KillWorker, RestartAPI, StopBroker, BrokerDown time.Duration
	// Fail and Slow are the shares of the sandbox's writes answered 500 and
	// held past the workers' timeout.
	Fail, Slow float64
}

// sample is one minute's reading of what could leak.
type sample struct {
	at                          time.Duration
	apiRSS, workerRSS           float64
	apiGoroutines, workerGorout float64
	pgConns                     float64
	bytesPerOrder               float64
}

// soak offers 0.8x the capacity (rate, or the ramp's when 0) for plan.For
// while the plan's faults run, samples every minute what could leak, and at
// the end holds the ledgers against each other and audits them.
func (b *bench) soak(ctx context.Context, plan soakPlan, rate float64, rampStep time.Duration) error {
	b.procEnv["PAYMENTS_TIMEOUT"] = soakTimeout.String()
	o, err := newOverload(ctx, b, "soak", backlogBound{}, 1)
	if err != nil {
		return err
	}
	defer o.close()
	o.patient = true
	if rate <= 0 {
		capacity, err := o.capacity(ctx, rampStep)
		if err != nil {
			return err
		}
		rate = 0.8 * capacity
	}
	// The soak's POSTs retry as clients do (Retry-After, broken connections).
	t := &o.tenants[0]
	if t.api, err = orderflow.New(orderflow.Options{BaseURL: b.apiURL, APIKey: t.key, HTTPClient: b.hc}); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "soak: %.1f orders a second for %s; worker killed every %s, API restarted every %s, broker stopped %s every %s; sandbox %.0f%% 500s, %.0f%% timeouts\n",
		rate, plan.For, plan.KillWorker, plan.RestartAPI, plan.BrokerDown, plan.StopBroker, 100*plan.Fail, 100*plan.Slow)
	loadCtx, stop := context.WithCancel(ctx)
	defer stop()
	st := &levelStats{}
	offered := make(chan error, 1)
	go func() { offered <- o.offer(loadCtx, rate, 0.5, plan.For, 10*time.Second, st) }()
	samples, err := b.soakSchedule(ctx, o, plan, rate, offered)
	if err != nil {
		return err
	}
	if err := b.sandboxPut(ctx, "/sandbox/faults", map[string]any{}); err != nil {
		return err
	}
	drained, err := o.drain(ctx, 30*time.Minute)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.out, "soak: %d POSTs admitted, %d shed (429 %d, 503 %d), %d failed after retries, %d events; drained in %.0f s\n",
		st.admitted, st.quota+st.shed, st.quota, st.shed, st.failed, st.events, drained.Seconds())
	printSlopes(b, samples)
	return b.soakLedger(ctx, o)
}

// soakSchedule runs the faults until the load ends, sampling every minute.
func (b *bench) soakSchedule(ctx context.Context, o *overload, plan soakPlan, rate float64, offered <-chan error) ([]sample, error) {
	began := time.Now()
	// A first restart, on the schedule's clock: the API's ops listener is known.
	apiOps, err := b.restartAPI()
	if err != nil {
		return nil, err
	}
	kill, restart, broker := time.NewTicker(plan.KillWorker), time.NewTicker(plan.RestartAPI), time.NewTicker(plan.StopBroker)
	minute, faults := time.NewTicker(time.Minute), time.NewTicker(10*time.Second)
	defer func() { kill.Stop(); restart.Stop(); broker.Stop(); minute.Stop(); faults.Stop() }()
	samples := []sample{b.sample(ctx, apiOps, 0)}
	if err := b.soakFaults(ctx, plan, rate); err != nil {
		return nil, err
	}
	for {
		var err error
		select {
		case err := <-offered:
			return samples, err
		case <-kill.C:
			err = b.killWorker(o.topic)
		case <-restart.C:
			apiOps, err = b.restartAPI()
		case <-broker.C:
			err = b.stopBroker(ctx, plan.BrokerDown)
		case <-faults.C:
			err = b.soakFaults(ctx, plan, rate)
		case <-minute.C:
			samples = append(samples, b.sample(ctx, apiOps, time.Since(began)))
		}
		if err != nil {
			return samples, err
		}
	}
}

// soakFaults sets the sandbox's faults for the next 10 s: its shares of the
// writes expected meanwhile (two a second per order: the intent and its
// confirm) fail or are slow.
func (b *bench) soakFaults(ctx context.Context, plan soakPlan, rate float64) error {
	writes := rate * 2 * 10
	return b.sandboxPut(ctx, "/sandbox/faults", map[string]any{"fail_before": int(plan.Fail * writes),
		"latency_ms": int((soakTimeout + time.Second).Milliseconds()), "slow": max(int(plan.Slow*writes), 1)})
}

// killWorker kills the worker (SIGKILL: nothing drains) and starts another.
func (b *bench) killWorker(topic string) error {
	if i := slices.IndexFunc(b.procs, isWorker); i >= 0 {
		p := b.procs[i]
		b.retired = append(b.retired, measureProc(p))
		p.Signal(syscall.SIGKILL)
		_, _ = p.Wait(10 * time.Second)
		b.procs = slices.Delete(b.procs, i, i+1)
	}
	return b.startWorker(topic)
}

// restartAPI stops the API (SIGTERM: it drains) and starts it again on the
// same address, and returns its ops listener.
func (b *bench) restartAPI() (string, error) {
	if i := slices.IndexFunc(b.procs, func(p *testkit.Proc) bool { return p.Name == "api" }); i >= 0 {
		p := b.procs[i]
		b.retired = append(b.retired, measureProc(p))
		p.Stop(30 * time.Second)
		b.procs = slices.Delete(b.procs, i, i+1)
	}
	ops, err := testkit.FreeAddr()
	if err != nil {
		return "", err
	}
	return ops, b.start("api", map[string]string{"API_ADDR": strings.TrimPrefix(b.apiURL, "http://"), "OPS_ADDR": ops}, "http://"+ops+"/readyz")
}

// stopBroker stops the stack's Kafka for down, then starts it again.
func (b *bench) stopBroker(ctx context.Context, down time.Duration) error {
	if err := exec.CommandContext(ctx, b.stack, "stop", "kafka").Run(); err != nil {
		return fmt.Errorf("stop kafka: %w", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(down):
	}
	if err := exec.CommandContext(context.WithoutCancel(ctx), b.stack, "start", "kafka").Run(); err != nil {
		return fmt.Errorf("start kafka: %w", err)
	}
	return nil
}

// sample reads what could leak: memory and goroutines of the API and the
// worker, PostgreSQL's connections, and the tables' bytes per order.
func (b *bench) sample(ctx context.Context, apiOps string, at time.Duration) sample {
	s := sample{at: at, apiGoroutines: goroutines("http://" + apiOps + "/metrics"), workerGorout: goroutines("http://" + b.ops + "/metrics")}
	for _, p := range b.procs {
		switch {
		case p.Name == "api":
			s.apiRSS = rssMiB(p.Pid())
		case isWorker(p):
			s.workerRSS = rssMiB(p.Pid())
		}
	}
	_ = b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()`).Scan(&s.pgConns)
	_ = b.pool.QueryRow(ctx, `SELECT (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r')
		/ GREATEST((SELECT count(*) FROM orders), 1)`).Scan(&s.bytesPerOrder)
	fmt.Fprintf(b.out, "  %5.1f min: RSS api %.0f MiB, worker %.0f MiB; goroutines api %.0f, worker %.0f; PostgreSQL connections %.0f; %.0f table bytes per order\n",
		at.Minutes(), s.apiRSS, s.workerRSS, s.apiGoroutines, s.workerGorout, s.pgConns, s.bytesPerOrder)
	return s
}

// goroutines reads go_goroutines from a /metrics page (0 when unread).
func goroutines(url string) float64 {
	resp, err := http.Get(url) //nolint:noctx // the bench's own process, a short read
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	return 0
}

// printSlopes prints each reading's least-squares slope against time, per hour.
func printSlopes(b *bench, ss []sample) {
	series := []struct {
		name string
		v    func(sample) float64
	}{
		{"RSS api (MiB)", func(s sample) float64 { return s.apiRSS }},
		{"RSS worker (MiB)", func(s sample) float64 { return s.workerRSS }},
		{"goroutines api", func(s sample) float64 { return s.apiGoroutines }},
		{"goroutines worker", func(s sample) float64 { return s.workerGorout }},
		{"PostgreSQL connections", func(s sample) float64 { return s.pgConns }},
		{"table bytes per order", func(s sample) float64 { return s.bytesPerOrder }},
	}
	for _, se := range series {
		var x, y []float64
		for _, s := range ss {
			x, y = append(x, s.at.Hours()), append(y, se.v(s))
		}
		fmt.Fprintf(b.out, "  slope of %-24s %+10.2f an hour over %d samples\n", se.name+":", slope(x, y), len(ss))
	}
}

// slope is the least-squares slope of y against x (0 under two points).
func slope(x, y []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx, sy, sxx, sxy = sx+x[i], sy+y[i], sxx+x[i]*x[i], sxy+x[i]*y[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// soakLedger holds keys, orders, workflows and charges of the soak's tenant
// against each other, then runs a read-only reconcile audit of it.
func (b *bench) soakLedger(ctx context.Context, o *overload) error {
	tenant := o.tenants[0].name
	var keys, events, orders int
	_ = b.pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE tenant = $1`, tenant).Scan(&keys)
	_ = b.pool.QueryRow(ctx, `SELECT count(*) FROM processed_events WHERE consumer_group = $1`, b.group).Scan(&events)
	_ = b.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE tenant = $1`, tenant).Scan(&orders)
	wf, err := b.tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: fmt.Sprintf("OrderflowTenant = '%s'", tenant)})
	if err != nil {
		return fmt.Errorf("count workflows: %w", err)
	}
	_, ok, err := o.invariant(ctx)
	if err != nil {
		return err
	}
	charged, err := b.chargedOrders(ctx)
	if err != nil {
		return err
	}
	verdict := "balanced"
	if keys+events != orders || int(wf.GetCount()) != orders || len(charged) != orders {
		verdict = "UNBALANCED"
	}
	fmt.Fprintf(b.out, "soak ledger (%s): keys %d + events %d = orders %d = workflows %d = charges %d (invariant held: %t)\n",
		verdict, keys, events, orders, wf.GetCount(), len(charged), ok)
	ring, err := payloadcodec.ParseKeyring(b.env["PAYLOAD_KEYS"])
	if err != nil {
		return fmt.Errorf("PAYLOAD_KEYS: %w", err)
	}
	dc, _ := payloadcodec.Converters(payloadcodec.New(ring))
	rec := reconcile.New(worker.NewEngine(b.tc, dc, b.env["TEMPORAL_NAMESPACE"], b.queue, fairness.Weights{}, workflows.Policy{LookupDelay: time.Second}),
		provider.New(provider.Config{URL: b.simURL, Timeout: 30 * time.Second}, nil), stacktest.TenantOrders{Store: orderstore.New(b.pool), Tenant: tenant},
		ledger.New(b.pool), stacktest.TenantRequests{Store: reconcile.NewStore(b.pool), Tenant: tenant}, reconcile.NewMetrics(prometheus.NewRegistry()),
		reconcile.Options{Grace: time.Minute, Overlap: 10 * time.Minute, FirstLookback: 24 * time.Hour})
	a, err := rec.Audit(ctx, time.Time{})
	if err != nil {
		return fmt.Errorf("reconcile audit: %w", err)
	}
	fmt.Fprintf(b.out, "soak reconcile audit: %d charges, %d unsettled orders, %d findings\n", a.Charges, a.Orders, len(a.Findings))
	for _, f := range a.Findings {
		fmt.Fprintf(b.out, "  finding %s: order %q, %s %d %s: %s\n", f.Kind, f.OrderID, f.ProviderID, f.Amount, f.Currency, f.Detail)
	}
	if verdict != "balanced" || !ok || len(a.Findings) > 0 {
		return fmt.Errorf("soak: ledger %s, invariant held %t, %d findings", verdict, ok, len(a.Findings))
	}
	return nil
}
