package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	orderflow "github.com/orderflow/orderflow/client"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/tenants/quota"
	"github.com/orderflow/orderflow/testkit"
)

// 13. Offered load above capacity. The stack's capacity is found first by a
// ramp (PAID orders a second, one worker); then 1x, 2x and 5x of it are offered
// for a while each, open loop (a flash sale does not wait for answers), half as
// POSTs with Prefer: wait and half as Kafka events, from two tenants: "a"
// (fairness weight 2, no request budget) and "b" (weight 1, a request budget
// of a quarter of the capacity, so its excess hears 429). After each level the
// backlog drains; after the last, every accepted order must be PAID once.

// overloadOutstanding bounds the POSTs the bench holds open at once; past it an
// offered POST is counted unsent rather than grow the bench itself.
const overloadOutstanding = 4000

// overload is one run of scenario 13 (and the soak's load).
type overload struct {
	b       *bench
	topic   string
	tenants []overTenant
	writer  *kafka.Writer
	// admin reads the group's offsets; one for the scenario, since each client
	// keeps a connection and a metadata refresh until closed.
	admin    *kafka.Client
	produced atomic.Int64 // events written
	// producedBy is the events written of each tenant (o.tenants' order).
	producedBy []atomic.Int64
	admitted   atomic.Int64 // POSTs answered 2xx
	seq        atomic.Int64 // keys and event IDs
	prefix     string
	patient    bool // events the broker refused are written again (the soak)
	// restP50 is the lighter tenant's Prefer: wait p50 at rest, what each
	// level's p50 of it is held against.
	restP50 float64
}

type overTenant struct {
	name, key string
	api       *orderflow.Client
	// patient retries as an application would: Retry-After honoured, for
	// minutes (the shed POSTs the bench sends again).
	patient *orderflow.Client
}

// shedEvery: one shed POST in this many is sent again by the client module.
const shedEvery = 10

// levelStats is what one level measured.
type levelStats struct {
	mu                    sync.Mutex
	lat                   []time.Duration
	latBy                 map[string][]time.Duration // admitted POSTs' latency by tenant
	admitted, quota, shed int
	failed, unsent        int
	// With resend, one shed POST in shedEvery is sent again at once by the
	// patient client: how many, how long each took to get in after its 503, how
	// many never did. (The ramp resends none: they would blur its rate.)
	resend               bool
	lateSent, lateFailed int
	late                 []time.Duration
	retries              sync.WaitGroup
	events               int
	lagPeak              int64
	slow                 []slowPost         // the slowest admitted POSTs, to trace
	rss                  map[string]float64 // peak VmRSS (MiB) by process
}

// backlogBound is the fleet's backlog bound a run sets (BACKLOG_ACCEPT,
// BACKLOG_FLOOR); empty: the defaults.
type backlogBound struct{ accept, floor string }

// newOverload makes the scenario's tenants and topic, and a worker that
// consumes it in a group of its own, weighing the tenants 2 to 1; the worker and
// the API it restarts bound the backlog as bound says.
func newOverload(ctx context.Context, b *bench, prefix string, bound backlogBound, weights ...int) (*overload, error) {
	o := &overload{b: b, topic: "bench-" + prefix + "-" + b.run, prefix: prefix, admin: b.kafka.Client()}
	if err := kafkaclient.CreateTopic(ctx, b.kafka, o.topic, 4, testkit.Replicas(b.env)); err != nil {
		return nil, err
	}
	keys := apikeys.New(b.pool, apikeys.DefaultCacheTTL)
	var fair []string
	for i, w := range weights {
		name := fmt.Sprintf("bench-%s-%c-%s", prefix, 'a'+i, b.run)
		key, err := keys.Create(ctx, name)
		if err != nil {
			return nil, err
		}
		if err := quota.NewStore(b.pool).Set(ctx, name, quota.Limit{Rate: 1e6, Burst: 1e6}); err != nil {
			return nil, err
		}
		c, err := b.newClient(key)
		if err != nil {
			return nil, err
		}
		patient, err := orderflow.New(orderflow.Options{BaseURL: b.apiURL, APIKey: key, HTTPClient: b.hc, MaxAttempts: 1000, MaxElapsed: 20 * time.Minute})
		if err != nil {
			return nil, err
		}
		o.tenants = append(o.tenants, overTenant{name: name, key: key, api: c, patient: patient})
		fair = append(fair, fmt.Sprintf("%s=%d", name, w))
	}
	o.producedBy = make([]atomic.Int64, len(o.tenants))
	b.group += "-" + prefix
	b.procEnv["CONSUMER_GROUP"] = b.group
	b.procEnv["FAIRNESS_WEIGHTS"] = strings.Join(fair, ",")
	if err := o.bind(bound); err != nil {
		return nil, err
	}
	o.writer = &kafka.Writer{Addr: kafka.TCP(b.kafka.Brokers...), Topic: o.topic, Balancer: &kafka.RoundRobin{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond, BatchSize: 500, Transport: b.kafka.Transport()}
	return o, nil
}

// bind restarts the worker and the API with the backlog bound (none: empty).
func (o *overload) bind(bound backlogBound) error {
	delete(o.b.procEnv, "BACKLOG_ACCEPT")
	delete(o.b.procEnv, "BACKLOG_FLOOR")
	for k, v := range map[string]string{"BACKLOG_ACCEPT": bound.accept, "BACKLOG_FLOOR": bound.floor} {
		if v != "" {
			o.b.procEnv[k] = v
		}
	}
	if err := o.b.replaceWorker(o.topic); err != nil {
		return err
	}
	_, err := o.b.restartAPI()
	return err
}

func (o *overload) tenantNames() []string {
	var names []string
	for _, t := range o.tenants {
		names = append(names, t.name)
	}
	return names
}

func (o *overload) close() {
	if o.writer != nil {
		_ = o.writer.Close()
	}
	kafkaclient.CloseClient(o.admin)
	delete(o.b.procEnv, "FAIRNESS_WEIGHTS")
	delete(o.b.procEnv, "BACKLOG_FLOOR")
	o.b.procEnv["BACKLOG_ACCEPT"] = "0"
	if _, err := o.b.restartAPI(); err != nil {
		fmt.Fprintf(o.b.out, "  restarting the API without the backlog bound: %v\n", err)
	}
}

// post places one order of t with Prefer: wait and counts its answer.
func (o *overload) post(t overTenant, st *levelStats, wait time.Duration) {
	key := fmt.Sprintf("%s-%s-%d", o.prefix, o.b.run, o.seq.Add(1))
	began := time.Now()
	_, err := o.b.placeAs(t.api, key, wait)
	took := time.Since(began)
	st.mu.Lock()
	defer st.mu.Unlock()
	var p *orderflow.Problem
	switch {
	case err == nil:
		o.admitted.Add(1)
		st.admitted++
		st.lat = append(st.lat, took)
		if st.latBy == nil {
			st.latBy = map[string][]time.Duration{}
		}
		st.latBy[t.name] = append(st.latBy[t.name], took)
		st.slow = keepSlow(st.slow, slowPost{workflowID: order.WorkflowID(t.name, order.FromHTTP, key), began: began, took: took})
	case errors.As(err, &p) && p.Status == 429:
		st.quota++
	case errors.As(err, &p) && p.Status == 503:
		st.shed++
		if st.resend && st.shed%shedEvery == 0 {
			st.lateSent++
			refused := time.Now()
			st.retries.Go(func() { o.retryShed(t, key, refused, st) })
		}
	default:
		st.failed++
	}
}

// produce writes n events, the tenants in turn.
func (o *overload) produce(ctx context.Context, n int, st *levelStats) error {
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		id := fmt.Sprintf("%s-%s-%d", o.prefix, o.b.run, o.seq.Add(1))
		t := o.tenants[i%len(o.tenants)]
		msgs[i] = kafka.Message{Key: []byte(id), Value: fmt.Appendf(nil, `{"eventId":%q,"tenant":%q,"order":%s}`, id, t.name, orderJSON)}
	}
	// The soak stops the broker: the same events again until it takes them
	// (their IDs make a second delivery start nothing).
	for {
		err := o.writer.WriteMessages(ctx, msgs...)
		if err == nil {
			break
		}
		if !o.patient || ctx.Err() != nil {
			return fmt.Errorf("produce: %w", err)
		}
	}
	o.produced.Add(int64(n))
	for i := range o.tenants { // the tenants in turn, from the first
		o.producedBy[i].Add(int64((n + len(o.tenants) - 1 - i) / len(o.tenants)))
	}
	st.mu.Lock()
	st.events += n
	st.mu.Unlock()
	return nil
}

// offer sends rate orders a second for d, open loop: httpShare of them as
// POSTs (the tenants in turn), the rest as events every 100 ms.
func (o *overload) offer(ctx context.Context, rate, httpShare float64, d, wait time.Duration, st *levelStats) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, overloadOutstanding)
	began := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	posts, events, lastProduce := 0, 0, began
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			el := min(now.Sub(began), d).Seconds()
			for ; posts < int(rate*httpShare*el); posts++ {
				t := o.tenants[posts%len(o.tenants)]
				select {
				case sem <- struct{}{}:
					wg.Go(func() { defer func() { <-sem }(); o.post(t, st, wait) })
				default:
					st.mu.Lock()
					st.unsent++
					st.mu.Unlock()
				}
			}
			if due := int(rate * (1 - httpShare) * el); due > events && (now.Sub(lastProduce) >= 100*time.Millisecond || el >= d.Seconds()) {
				if err := o.produce(ctx, due-events, st); err != nil {
					return err
				}
				events, lastProduce = due, now
			}
			if el >= d.Seconds() {
				return nil
			}
		}
	}
}

// retryShed sends a shed POST again through the client module, which honours
// Retry-After, as an application would, and counts how long it took to get in
// after its first refusal; one that got in is an admitted order.
func (o *overload) retryShed(t overTenant, key string, refused time.Time, st *levelStats) {
	_, err := o.b.placeAs(t.patient, key, 0)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err != nil {
		st.lateFailed++
		return
	}
	o.admitted.Add(1)
	st.late = append(st.late, time.Since(refused))
}

// lag is the events written and not yet committed by the worker's group.
func (o *overload) lag(ctx context.Context) (int64, error) {
	// A read on a connection the broker dropped (the soak stops it) would wait
	// forever: the next sample asks again.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := o.admin.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: o.b.group, Topics: map[string][]int{o.topic: {0, 1, 2, 3}}})
	if err != nil {
		return 0, fmt.Errorf("offsets: %w", err)
	}
	var committed int64
	for _, p := range resp.Topics[o.topic] {
		committed += max(p.CommittedOffset, 0)
	}
	return o.produced.Load() - committed, nil
}

// watch samples the Kafka lag and every process's RSS each second until the
// returned stop is called.
func (o *overload) watch(ctx context.Context, st *levelStats) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	st.rss = map[string]float64{}
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			lag, _ := o.lag(ctx)
			st.mu.Lock()
			st.lagPeak = max(st.lagPeak, lag)
			for _, p := range o.b.procs {
				name := p.Name
				if isWorker(p) {
					name = "worker"
				}
				st.rss[name] = max(st.rss[name], rssMiB(p.Pid()))
			}
			st.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// rssMiB is a process's resident memory now (VmRSS), 0 when it is gone.
func rssMiB(pid int) float64 {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// unsettled is how many of the scenario's orders are not PAID yet.
func (o *overload) unsettled(ctx context.Context) (int, error) {
	var n int
	err := o.b.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE tenant = ANY($1) AND status <> 'PAID'`, o.tenantNames()).Scan(&n)
	return n, err
}

// paid is how many of the scenario's orders are PAID.
func (o *overload) paid(ctx context.Context) (int, error) {
	var n int
	err := o.b.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE tenant = ANY($1) AND status = 'PAID'`, o.tenantNames()).Scan(&n)
	return n, err
}

// drain waits until the worker's group has committed every event and every
// order made is PAID, and says how long it took.
func (o *overload) drain(ctx context.Context, limit time.Duration) (time.Duration, error) {
	began := time.Now()
	err := o.b.poll(ctx, limit, 250*time.Millisecond, func() bool {
		lag, err := o.lag(ctx)
		if err != nil || lag > 0 {
			return false
		}
		n, err := o.unsettled(ctx)
		return err == nil && n == 0 && int64(o.made(ctx)) >= o.admitted.Load()+o.produced.Load()
	})
	if err != nil {
		return 0, fmt.Errorf("drain: %w", err)
	}
	return time.Since(began), nil
}

// startedAll reports, once, how long after since every event of the tenant at
// index i written so far had started its workflow (its processed_events row):
// a tenant within its budget is not held behind another's events over theirs.
// It gives up with ctx, or after limit.
func (o *overload) startedAll(ctx context.Context, i int, since time.Time, limit time.Duration) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	want := o.producedBy[i].Load()
	go func() {
		_ = o.b.poll(ctx, limit, 250*time.Millisecond, func() bool {
			var n int64
			err := o.b.pool.QueryRow(ctx, `SELECT count(*) FROM processed_events WHERE consumer_group = $1 AND tenant = $2`,
				o.b.group, o.tenants[i].name).Scan(&n)
			return err == nil && n >= want
		})
		out <- time.Since(since)
	}()
	return out
}

// made is how many orders the scenario's tenants have.
func (o *overload) made(ctx context.Context) int {
	var n int
	_ = o.b.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE tenant = ANY($1)`, o.tenantNames()).Scan(&n)
	return n
}

// overloaded runs scenario 13: the ramp, then each level for levelFor.
func (b *bench) overloaded(ctx context.Context, levelFor, rampStep time.Duration) ([]Result, error) {
	// The fleet's backlog bound, on (it is off by default), the ramp included:
	// 2 s, floor 20. The bound keeps the closing rate's peak, so it holds the
	// fleet busy as long as a workflow takes less than 2 s under load; 1 s did
	// not (docs/capacity.md). A ramp without it finds what POSTs without wait
	// pay (26.7-30.9 a second here), which the levels' mix does not: at 1x of
	// it every wait ran out, and 5x of it leaves a backlog longer than the drain
	// limit.
	o, err := newOverload(ctx, b, "overload", backlogBound{accept: "2s", floor: "20"}, 2, 1)
	if err != nil {
		return nil, err
	}
	defer o.close()
	if o.restP50, err = o.atRest(ctx, 20); err != nil {
		return nil, err
	}
	fmt.Fprintf(b.out, "  tenant b at rest: Prefer: wait p50 %.1f ms\n", o.restP50)
	capacity, err := o.capacity(ctx, rampStep)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(b.out, "  capacity: %.1f PAID orders a second (one worker)\n", capacity)
	res := []Result{{Scenario: "13a. capacity: PAID orders a second, one worker (ramp)", N: o.made(ctx), Rate: capacity,
		Note: fmt.Sprintf("half POSTs without wait, half events, offered rate x1.5 every %s until PAID fell under 0.8x the offered", rampStep)}}
	// Tenant b's budget is a quarter of the capacity: its excess hears 429.
	if err := quota.NewStore(b.pool).Set(ctx, o.tenants[1].name, quota.Limit{Rate: capacity / 4, Burst: max(int(capacity/4), 1)}); err != nil {
		return nil, err
	}
	for i, x := range []float64{1, 2, 5} {
		r, err := o.level(ctx, fmt.Sprintf("13%c. overload %gx", 'b'+i, x), x*capacity, levelFor)
		if err != nil {
			return nil, err
		}
		res = append(res, r)
	}
	fmt.Fprintln(b.out, "  "+o.held(res[1], res[3]))
	line, ok, err := o.invariant(ctx)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(b.out, "  "+line)
	res = append(res, Result{Scenario: "13e. overload: after the drain", N: int(o.admitted.Load() + o.produced.Load()), Note: line})
	if !ok {
		return res, errors.New(line)
	}
	return res, nil
}

// capacity offers the levels' mix (half POSTs, here without wait, half events)
// at a rate growing by half every step until the PAID rate falls behind; the
// best PAID rate seen is the capacity.
func (o *overload) capacity(ctx context.Context, step time.Duration) (float64, error) {
	best := 0.0
	for rate := 10.0; rate < 5000; rate *= 1.5 {
		before, err := o.paid(ctx)
		if err != nil {
			return 0, err
		}
		began := time.Now()
		if err := o.offer(ctx, rate, 0.5, step, 0, &levelStats{}); err != nil {
			return 0, err
		}
		after, err := o.paid(ctx)
		if err != nil {
			return 0, err
		}
		got := float64(after-before) / time.Since(began).Seconds()
		fmt.Fprintf(o.b.out, "  ramp: offered %.0f/s, PAID %.1f/s\n", rate, got)
		best = max(best, got)
		if got < 0.8*rate {
			break
		}
	}
	if _, err := o.drain(ctx, 10*time.Minute); err != nil {
		return 0, fmt.Errorf("after the ramp: %w", err)
	}
	return best, nil
}

// level offers rate for d (half POSTs with Prefer: wait=10, half events),
// drains, and prints what it measured.
func (o *overload) level(ctx context.Context, name string, rate float64, d time.Duration) (Result, error) {
	st := &levelStats{resend: true}
	stop := o.watch(ctx, st)
	if err := o.offer(ctx, rate, 0.5, d, 10*time.Second, st); err != nil {
		stop()
		return Result{Scenario: name}, err
	}
	offered := time.Now()
	firstCtx, cancelFirst := context.WithCancel(ctx)
	defer cancelFirst()
	limit := 10*time.Minute + 5*d
	first := o.startedAll(firstCtx, 0, offered, limit)
	st.retries.Wait()
	_, err := o.drain(ctx, limit)
	drained := time.Since(offered) // the latecomers' time in it
	stop()
	aStarted := <-first
	if err != nil {
		return Result{Scenario: name}, fmt.Errorf("%s: %w", name, err)
	}
	secs := d.Seconds()
	r := result(fmt.Sprintf("%s: %.0f/s offered", name, rate), st.admitted+st.events, d, st.lat)
	r.Note = fmt.Sprintf("admitted %.1f/s POSTs + %.1f/s events; shed 429 %.1f/s, 503 %.1f/s; unsent %d, failed %d; admitted POSTs (Prefer: wait=10) p50 %s ms, p99 %s ms; "+
		"Kafka lag peak %d, drained %.0f s after the offer ended (the latecomers included), tenant a's events all started after %.0f s; RSS peak api %.0f MiB, worker %.0f MiB",
		float64(st.admitted)/secs, float64(st.events)/secs, float64(st.quota)/secs, float64(st.shed)/secs, st.unsent, st.failed,
		ms(r.P50ms), ms(r.P99ms), st.lagPeak, drained.Seconds(), aStarted.Seconds(), st.rss["api"], st.rss["worker"])
	if st.lateSent > 0 {
		lr := result("", len(st.late), d, st.late)
		r.Note += fmt.Sprintf("; shed POSTs sent again at once by the client (1 in %d, Retry-After honoured): %d of %d got in, p50 %.1f s, p99 %.1f s, max %.1f s after the first 503",
			shedEvery, len(st.late), st.lateSent, lr.P50ms/1000, lr.P99ms/1000, float64(slices.Max(append(st.late, 0)))/float64(time.Second))
		if st.lateFailed > 0 {
			r.Note += fmt.Sprintf(", %d never", st.lateFailed)
		}
	}
	for i, t := range o.tenants { // a (weight 2, no budget), b (weight 1, a budget)
		p50 := result("", len(st.latBy[t.name]), d, st.latBy[t.name]).P50ms
		r.Note += fmt.Sprintf("; tenant %c p50 %s ms", 'a'+i, ms(p50))
		if i == len(o.tenants)-1 && o.restP50 > 0 {
			r.Note += fmt.Sprintf(" (%.1fx its p50 at rest)", p50/o.restP50)
			r.Ratio, r.Baseline = p50/o.restP50, "the lighter tenant's p50 at rest"
		}
	}
	if trace := o.b.traceSlowest(ctx, st.slow); trace != "" {
		r.Note += "; " + trace
	}
	fmt.Fprintf(o.b.out, "  %s\n    %s\n", r.Scenario, r.Note)
	return r, nil
}

// invariant holds the scenario's ledgers against each other once drained:
// accepted = PAID = charges, events = orders they made, none lost, doubled or
// left PENDING.
func (o *overload) invariant(ctx context.Context) (string, bool, error) {
	accepted := int(o.admitted.Load() + o.produced.Load())
	paid, err := o.paid(ctx)
	if err != nil {
		return "", false, err
	}
	pending, err := o.unsettled(ctx)
	if err != nil {
		return "", false, err
	}
	var ids []string
	rows, err := o.b.pool.Query(ctx, `SELECT id FROM orders WHERE tenant = ANY($1)`, o.tenantNames())
	if err != nil {
		return "", false, fmt.Errorf("orders: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", false, fmt.Errorf("orders: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return "", false, fmt.Errorf("orders: %w", err)
	}
	charged, err := o.b.chargedOrders(ctx)
	if err != nil {
		return "", false, err
	}
	mine := map[string]int{}
	for _, id := range ids {
		mine[id] = 0
	}
	charges, doubled := 0, 0
	for _, id := range charged {
		if n, ok := mine[id]; ok {
			charges++
			if n > 0 {
				doubled++
			}
			mine[id] = n + 1
		}
	}
	var fromEvents int
	if err := o.b.pool.QueryRow(ctx, `SELECT count(*) FROM processed_events WHERE consumer_group = $1`, o.b.group).Scan(&fromEvents); err != nil {
		return "", false, fmt.Errorf("processed events: %w", err)
	}
	lost := max(accepted-len(ids), 0)
	ok := accepted == paid && paid == charges && int(o.produced.Load()) == fromEvents && lost == 0 && doubled == 0 && pending == 0
	verdict := "held"
	if !ok {
		verdict = "BROKEN"
	}
	return fmt.Sprintf("invariant after drain (%s): accepted %d = PAID %d = charges %d, events %d = orders by event %d, %d lost, %d doubled, %d PENDING",
		verdict, accepted, paid, charges, o.produced.Load(), fromEvents, lost, doubled, pending), ok, nil
}

// atRest times n orders of the lighter tenant placed one after another with
// Prefer: wait on the idle stack and returns their p50 in ms.
func (o *overload) atRest(ctx context.Context, n int) (float64, error) {
	t := o.tenants[len(o.tenants)-1]
	var lat []time.Duration
	for i := range n {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		began := time.Now()
		if _, err := o.b.placeAs(t.api, fmt.Sprintf("%s-%s-rest-%d", o.prefix, o.b.run, i), 10*time.Second); err != nil {
			return 0, fmt.Errorf("at rest: %w", err)
		}
		lat = append(lat, time.Since(began))
	}
	o.admitted.Add(int64(n))
	return result("", n, time.Second, lat).P50ms, nil
}

// held says how the admitted POSTs' p99 at 5x compares with 1x's (3x at most
// holds) and the lighter tenant's p50 at 5x with its p50 at rest.
func (o *overload) held(one, five Result) string {
	return fmt.Sprintf("held: admitted POSTs' p99 at 5x %.2fx of 1x's (%s / %s ms; at most 3x holds); tenant b's p50 at 5x %.1fx its p50 at rest (scenario 9's fairness figure: 3.2-5.3x)",
		five.P99ms/max(one.P99ms, 1e-9), ms(five.P99ms), ms(one.P99ms), five.Ratio)
}
