package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"go.temporal.io/sdk/client"

	orderflow "github.com/orderflow/orderflow/client"
	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/testkit"
	"github.com/orderflow/orderflow/workflows"
)

// benchOrder is orderJSON as the client sends it.
var benchOrder = orderflow.OrderRequest{CustomerID: "cus_bench", Currency: "USD", PaymentMethod: "pm_card_visa",
	Items: []orderflow.Item{{SKU: "sku-1", Quantity: 2, UnitAmount: 1299}}}

const orderJSON = `{"customer_id":"cus_bench","currency":"USD","items":[{"sku":"sku-1","quantity":2,"unit_amount":1299}],"payment_method":"pm_card_visa"}`

// measure runs op for i in [0, n) on conc goroutines and reports each latency.
func measure(n, conc int, op func(i int) error) (lat []time.Duration, total time.Duration, err error) {
	lat = make([]time.Duration, n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	began := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t := time.Now()
				if err := op(i); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("operation %d: %w", i, err) })
					return
				}
				lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	return lat, time.Since(began), firstErr
}

func result(name string, n int, total time.Duration, lat []time.Duration) Result {
	r := Result{Scenario: name, N: n, Seconds: total.Seconds(), Rate: float64(n) / total.Seconds()}
	if len(lat) > 0 {
		s := slices.Clone(lat)
		slices.Sort(s)
		pct := func(p float64) float64 {
			return float64(s[min(int(p*float64(len(s))), len(s)-1)].Microseconds()) / 1000
		}
		r.P50ms, r.P95ms, r.P99ms = pct(0.50), pct(0.95), pct(0.99)
	}
	return r
}

func (b *bench) placeOrder(key string) workflows.PlaceOrder {
	req, _ := orders.DecodeRequest([]byte(orderJSON))
	return workflows.PlaceOrder{Order: req.Order(b.tenant, order.WorkflowID(b.tenant, order.FromHTTP, key))}
}

// settle waits until every order started so far is paid, so that no scenario is
// measured while the worker still runs the previous one's workflows.
func (b *bench) settle(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		paid, err := orderstore.New(b.pool).CountByStatus(ctx, b.tenant, order.StatusPaid)
		if err != nil {
			return err
		}
		if paid >= b.started {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d orders paid after 10 minutes", paid, b.started)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// 1. Raw client.ExecuteWorkflow with unique IDs: what users would write by hand.
func (b *bench) baselineStart(ctx context.Context) (Result, error) {
	lat, total, err := measure(b.n, b.conc, func(i int) error {
		in := b.placeOrder(fmt.Sprintf("base-%d", i))
		_, err := b.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: in.Order.WorkflowID, TaskQueue: b.queue}, workflows.Order, in)
		return err
	})
	return result("1. baseline start", b.n, total, lat), err
}

// newClient is orderflow's client for one tenant's API key, sending each
// request once: the bench measures requests, and a retry would hide a failure.
func (b *bench) newClient(apiKey string) (*orderflow.Client, error) {
	return orderflow.New(orderflow.Options{BaseURL: b.apiURL, APIKey: apiKey, HTTPClient: b.hc, MaxAttempts: 1})
}

// placeAs places an order through c, waiting up to wait for it to settle.
func (b *bench) placeAs(c *orderflow.Client, key string, wait time.Duration) (*orderflow.Placement, error) {
	var opts []orderflow.PlaceOption
	if wait > 0 {
		opts = append(opts, orderflow.WithWait(wait))
	}
	return c.PlaceOrder(context.Background(), benchOrder, append(opts, orderflow.WithKey(key))...)
}

// accepted places a new order: 202.
func (b *bench) accepted(key string) error {
	p, err := b.placeAs(b.api, key, 0)
	if err == nil && (p.Replayed || p.Finished) {
		err = fmt.Errorf("%s: not a new order (replayed %t)", key, p.Replayed)
	}
	return err
}

// replayed sends key's order again: its stored answer.
func (b *bench) replayed(key string) error {
	p, err := b.placeAs(b.api, key, 0)
	if err == nil && !p.Replayed {
		err = fmt.Errorf("%s: not a replay", key)
	}
	return err
}

// paidWithin places an order and waits for it to be PAID: 201.
func (b *bench) paidWithin(key string, wait time.Duration) error {
	return b.paidBy(benchOrder.CustomerID, key, wait)
}

// paidBy is paidWithin for an order of the given customer.
func (b *bench) paidBy(customer, key string, wait time.Duration) error {
	req := benchOrder
	req.CustomerID = customer
	p, err := b.api.PlaceOrder(context.Background(), req, orderflow.WithWait(wait), orderflow.WithKey(key))
	if err == nil && (!p.Finished || p.Status != orderflow.Paid) {
		err = fmt.Errorf("%s: not paid: %s", key, p.Status)
	}
	return err
}

// 2. POST /v1/orders with unique keys.
func (b *bench) httpStart(ctx context.Context) (Result, error) {
	lat, total, err := measure(b.n, b.conc, func(i int) error {
		return b.accepted(fmt.Sprintf("http-%d", i))
	})
	return result("2. HTTP start", b.n, total, lat), err
}

// replayRounds is how many times scenario 3 replays each key: n replays at 16
// clients last about a tenth of a second, too short for a p99 of anything but the
// first requests, and 4n about a quarter, where one pause of another process on
// the machine (a checkpoint, a log flush) moves the p99 by half; 20n last
// about a second and a half.
const replayRounds = 20

// 3. The same keys again: answered from Postgres, without Temporal. An unmeasured
// warm-up of ten requests per client first (connections, the first GC), then each
// key replayRounds times.
func (b *bench) httpReplay(ctx context.Context) (Result, error) {
	replay := func(i int) error {
		return b.replayed(fmt.Sprintf("http-%d", i%b.n))
	}
	if _, _, err := measure(10*b.conc, b.conc, replay); err != nil {
		return Result{Scenario: "3. HTTP replay"}, fmt.Errorf("warm-up: %w", err)
	}
	n := replayRounds * b.n
	lat, total, err := measure(n, b.conc, replay)
	return result("3. HTTP replay", n, total, lat), err
}

func (b *bench) produce(ctx context.Context, topic string, value func(i int) []byte) error {
	return b.produceN(ctx, topic, b.n, value)
}

// consume reads n messages with a plain kafka-go group reader, committing every
// `every` messages (1: the seed article's commit per message).
func (b *bench) consume(ctx context.Context, name string, every int) (Result, error) {
	if name == "4a. consume, commit each message" {
		if err := b.produce(ctx, b.topics["plain"], func(i int) []byte { return []byte(orderJSON) }); err != nil {
			return Result{Scenario: name}, err
		}
	}
	r := b.kafka.NewReader(kafka.ReaderConfig{GroupID: testkit.Name("plain"), Topic: b.topics["plain"],
		StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var batch []kafka.Message
	var began time.Time
	for i := range b.n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return Result{Scenario: name}, err
		}
		if i == 0 {
			began = time.Now() // the group join is not the consumer's throughput
		}
		batch = append(batch, m)
		if len(batch) == every || i == b.n-1 {
			if err := r.CommitMessages(ctx, batch...); err != nil {
				return Result{Scenario: name}, err
			}
			batch = batch[:0]
		}
	}
	res := result(name, b.n, time.Since(began), nil)
	res.Note = fmt.Sprintf("plain kafka-go reader, commit every %d", every)
	return res, nil
}

func (b *bench) consumeCommitEach(ctx context.Context) (Result, error) {
	return b.consume(ctx, "4a. consume, commit each message", 1)
}

func (b *bench) consumeCommitBatched(ctx context.Context) (Result, error) {
	return b.consume(ctx, "4b. consume, batched in-order commits", 100)
}

// 5. N pre-produced events through the worker's consumer: every workflow started
// and every offset committed.
func (b *bench) kafkaIngress(ctx context.Context) (Result, error) {
	return b.ingress(ctx, "5. Kafka ingress", b.topics["requests"], "-ingress", "kafka", false)
}

// ingress produces n events (eventIds prefix-i) to topic, then has a worker of a
// new consumer group (the bench's group plus suffix) turn them into workflows,
// measured from the first start to the last, with every offset committed. With
// untilPaid, the CPU is counted until every order the events made is paid: all
// an event costs, where the window of the starts alone holds however many of
// the orders the worker ran meanwhile.
func (b *bench) ingress(ctx context.Context, name, topic, suffix, prefix string, untilPaid bool) (Result, error) {
	err := b.produce(ctx, topic, func(i int) []byte {
		return []byte(fmt.Sprintf(`{"eventId":"%s-%d","tenant":%q,"order":%s}`, prefix, i, b.tenant, orderJSON))
	})
	if err != nil {
		return Result{Scenario: name}, err
	}
	b.procEnv["CONSUMER_IN_FLIGHT"] = strconv.Itoa(b.conc) // the baseline's concurrency, over the 4 partitions
	// A group of its own, and a worker that takes the first one's place: the fleet
	// stays one worker, as in the baseline.
	b.group += suffix
	b.procEnv["CONSUMER_GROUP"] = b.group
	if err := b.replaceWorker(topic); err != nil {
		return Result{Scenario: name}, err
	}
	// The CPU from here: the worker that turns the events into starts is the
	// one just started (the stopped one's time leaves the sums).
	before := machineCPU()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		n, span, err := idempotency.NewEvents(b.pool).Span(ctx, b.group, b.tenant)
		if err != nil {
			return Result{Scenario: name}, err
		}
		if n >= b.n {
			if err := b.waitCommitted(ctx, topic); err != nil {
				return Result{Scenario: name}, err
			}
			// From the first start to the last: the group join is not throughput.
			res := result(name, b.n, time.Duration(span*float64(time.Second)), nil)
			res.Note = fmt.Sprintf("4 partitions, CONSUMER_IN_FLIGHT=%s over them (the baseline's concurrency); first to last start; all offsets committed; %s",
				b.procEnv["CONSUMER_IN_FLIGHT"], b.startShare(ctx))
			if untilPaid {
				b.started += b.n
				if err := b.settle(ctx); err != nil {
					return res, err
				}
				res.Note += "; CPU until every order the events made was paid"
			}
			res.CPUPerOp = cpuPerOp(before, machineCPU(), b.n)
			return res, nil
		}
		if time.Now().After(deadline) {
			return Result{Scenario: name}, fmt.Errorf("%d of %d events processed after 10 minutes", n, b.n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *bench) waitCommitted(ctx context.Context, topic string) error {
	cl := b.kafka.Client()
	defer kafkaclient.CloseClient(cl)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: b.group, Topics: map[string][]int{topic: {0, 1, 2, 3}}})
		if err != nil {
			return err
		}
		var sum int64
		for _, p := range resp.Topics[topic] {
			sum += max(p.CommittedOffset, 0)
		}
		if sum == int64(b.n) {
			return nil
		}
	}
	return errors.New("offsets not all committed within a minute")
}

// chargedOrders is the order of each of the sandbox's charges, every page of its
// list (Stripe's lists answer 10 at a time unless asked for up to 100).
func (b *bench) chargedOrders(ctx context.Context) ([]string, error) {
	var orders []string
	after := ""
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.simURL+"/v1/charges?limit=100"+after, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		var page struct {
			Data []struct {
				ID       string            `json:"id"`
				Metadata map[string]string `json:"metadata"`
			} `json:"data"`
			HasMore bool `json:"has_more"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("charges: %w", err)
		}
		for _, c := range page.Data {
			orders = append(orders, c.Metadata["order_id"])
		}
		if !page.HasMore || len(page.Data) == 0 {
			return orders, nil
		}
		after = "&starting_after=" + page.Data[len(page.Data)-1].ID
	}
}

// 6. POST with Prefer: wait until the order is PAID (charged at the sandbox, row in
// Postgres, OrderPaid published), then count the sandbox's charges.
func (b *bench) endToEnd(ctx context.Context) (Result, error) {
	return b.endToEndAs(ctx, "6. end to end (HTTP until PAID)", "e2e")
}

// 6e. Scenario 6 on a worker with EAGER_DISPATCH=true: PayIntent goes straight
// back to the worker whose workflow task scheduled it, not through matching.
func (b *bench) endToEndEager(ctx context.Context) (Result, error) {
	return b.withEager(ctx, func(ctx context.Context) (Result, error) {
		return b.endToEndAs(ctx, "6e. end to end, eager dispatch (EAGER_DISPATCH=true)", "e2e-eager")
	})
}

// withEager runs a scenario on a worker with EAGER_DISPATCH=true in the running
// one's place, its CPU read from after the swap, then puts a worker without it
// back.
func (b *bench) withEager(ctx context.Context, scenario func(context.Context) (Result, error)) (Result, error) {
	b.procEnv["EAGER_DISPATCH"] = "true"
	defer func() {
		delete(b.procEnv, "EAGER_DISPATCH")
		if err := b.replaceWorker(b.consuming); err != nil {
			fmt.Fprintln(b.out, "bench: a worker without eager dispatch:", err)
		}
	}()
	if err := b.replaceWorker(b.consuming); err != nil {
		return Result{}, err
	}
	before := machineCPU()
	res, err := scenario(ctx)
	res.CPUPerOp = cpuPerOp(before, machineCPU(), max(res.N, 1))
	return res, err
}

func (b *bench) endToEndAs(ctx context.Context, name, prefix string) (Result, error) {
	return b.endToEndBy(ctx, name, prefix, func(int) string { return benchOrder.CustomerID })
}

// endToEndBy is endToEndAs with order i placed by customer(i).
func (b *bench) endToEndBy(ctx context.Context, name, prefix string, customer func(i int) string) (Result, error) {
	key := func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) }
	b.sampleHistories(name, func(i int) string { return order.WorkflowID(b.tenant, order.FromHTTP, key(i)) })
	cpuBefore := b.cpuSeconds()
	lat, total, err := measure(b.n, b.conc, func(i int) error {
		return b.paidBy(customer(i), key(i), 30*time.Second)
	})
	if err != nil {
		return Result{Scenario: name}, err
	}
	charged, err := b.chargedOrders(ctx)
	if err != nil {
		return Result{Scenario: name}, err
	}
	perOrder := map[string]int{}
	for i := range b.n {
		perOrder[order.IDFor(order.WorkflowID(b.tenant, order.FromHTTP, key(i)))] = 0
	}
	charges := 0
	for _, id := range charged {
		if n, ok := perOrder[id]; ok {
			perOrder[id] = n + 1
			charges++
		}
	}
	for _, n := range perOrder {
		if n != 1 {
			charges = -1 // some order charged twice or not at all
		}
	}
	res := result(name, b.n, total, lat)
	res.Note = fmt.Sprintf("sandbox charges for these orders: %d (want %d); CPU %.1f ms per order (api + worker)",
		charges, b.n, 1000*(b.cpuSeconds()-cpuBefore)/float64(b.n))
	if charges != b.n {
		return res, fmt.Errorf("duplicate or missing charges: %d for %d orders", charges, b.n)
	}
	return res, nil
}

// startShare reads the ingress worker's histograms: how much of an event's mean
// time went to the workflow start, the rest being the consumer's own work.
func (b *bench) startShare(ctx context.Context) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.ops+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "metrics: " + err.Error()
	}
	defer resp.Body.Close()
	sums := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, v, ok := strings.Cut(sc.Text(), " "); ok && strings.HasPrefix(name, "orderflow_consumer_") {
			sums[name], _ = strconv.ParseFloat(v, 64)
		}
	}
	mean := func(h string) float64 {
		return 1000 * sums["orderflow_consumer_"+h+"_duration_seconds_sum"] / max(sums["orderflow_consumer_"+h+"_duration_seconds_count"], 1)
	}
	return fmt.Sprintf("mean per event %.1f ms, of which the start %.1f ms", mean("event"), mean("start"))
}
