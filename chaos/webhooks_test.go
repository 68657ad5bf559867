//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

const webhookSecret = "whsec_chaos_current"

// threeDSOrderJSON pays with Stripe's test card that needs 3-D Secure on every
// payment.
var threeDSOrderJSON = strings.Replace(orderJSON, "pm_card_visa", "pm_card_authenticationRequired", 1)

// withWebhooks has the sandbox deliver its events to the rig's API, which verifies
// them with the secrets given (all of them, a rotation's overlap); poll is the
// orders' fallback interval.
func (r *rig) withWebhooks(poll string, secrets ...string) {
	if len(secrets) == 0 {
		secrets = []string{webhookSecret}
	}
	r.apiEnv = map[string]string{"PAYMENTS_URL": r.SimURL, "PAYMENTS_WEBHOOK_SECRETS": strings.Join(secrets, ","),
		"PAYMENT_POLL_INTERVAL": poll}
	r.Sim.SetWebhooks(sandbox.Webhooks{URL: "http://" + r.apiAddr + "/webhooks/stripe", Secrets: []string{webhookSecret},
		RetryMS: 300, DelayMS: 200, Duplicates: 1})
}

// awaitCustomer places a 3-D Secure order and waits until it asks for its
// customer; it returns the order and its intent, checked against the next action
// GET shows.
func (r *rig) awaitCustomer(t *testing.T, key string) (orderID, intentID string) {
	t.Helper()
	status, id := r.postBody(t, key, threeDSOrderJSON)
	if status != 202 {
		t.Fatalf("POST: %d", status)
	}
	var v struct {
		Status     string
		PaymentRef string `json:"payment_ref"`
		NextAction *struct {
			Type         string
			RedirectURL  string `json:"redirect_url"`
			ClientSecret string `json:"client_secret"`
		} `json:"next_action"`
	}
	stacktest.Eventually(t, time.Minute, "the order to wait on its customer", func() bool {
		v.NextAction = nil
		_ = json.Unmarshal(r.get(t, "/v1/orders/"+id), &v)
		return v.Status == string(order.StatusActionRequired) && v.NextAction != nil
	})
	na := v.NextAction
	redirect := na.Type == "redirect_to_url" && na.RedirectURL == r.SimURL+"/sandbox/3ds/"+v.PaymentRef
	stripeJS := na.Type == "use_stripe_sdk" && strings.HasPrefix(na.ClientSecret, v.PaymentRef+"_secret_")
	if !redirect && !stripeJS {
		t.Fatalf("next action %+v for intent %s", na, v.PaymentRef)
	}
	r.nextAction = na.Type
	return id, v.PaymentRef
}

// get reads an API path with the rig's key.
func (r *rig) get(t *testing.T, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+r.apiAddr+path, nil)
	req.Header.Set("Authorization", "Bearer "+r.apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// customerActs completes or fails the authentication, as the customer would on the
// bank's page.
func (r *rig) customerActs(t *testing.T, intentID, outcome string) time.Time {
	t.Helper()
	at := time.Now()
	resp, err := http.PostForm(r.SimURL+"/sandbox/3ds/"+intentID, url.Values{"outcome": {outcome}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("authenticate: %d", resp.StatusCode)
	}
	return at
}

// statusAt waits for the order's status and returns when it was first seen.
func (r *rig) statusAt(t *testing.T, orderID string, want order.Status, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND status = $2`, orderID, want) == 1 {
			return time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("order %s not %s within %s (the sandbox's webhooks: %+v)", orderID, want, within, r.Sim.WebhookStats())
	return time.Time{}
}

// webhookOutcome is what the API recorded for the events about an intent: the
// outcomes, and the deliveries of all of them.
func (r *rig) webhookOutcomes(t *testing.T, intentID string) (outcomes []string, deliveries int) {
	t.Helper()
	rows, err := r.Pool.Query(context.Background(), `SELECT COALESCE(outcome, ''), deliveries FROM webhook_events WHERE intent_id = $1`, intentID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var o string
		var n int
		if err := rows.Scan(&o, &n); err != nil {
			t.Fatal(err)
		}
		outcomes, deliveries = append(outcomes, o), deliveries+n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return outcomes, deliveries
}

// checkWakes: the order's history holds at most one signal per event that woke
// it, and at least one if mustWake.
func (r *rig) checkWakes(t *testing.T, orderID, intentID string, mustWake bool) {
	t.Helper()
	var outcomes []string
	var woke, signals int
	// An outcome is recorded just after its signal is sent: give it a moment.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		outcomes, _ = r.webhookOutcomes(t, intentID)
		woke = 0
		for _, o := range outcomes {
			if o == "woke" {
				woke++
			}
		}
		signals = r.signals(t, orderID)
		if (signals <= woke && (!mustWake || signals > 0)) || time.Now().After(deadline) {
			break
		}
	}
	if signals > woke || (mustWake && signals == 0) {
		t.Fatalf("webhook outcomes %v, %d signals: want the order woken, at most once per event that woke it", outcomes, signals)
	}
}

// signals counts the intent-changed signals in the order's history. A read
// of the history is given 10 s by the client: on a busy machine one ran out,
// and the history is read again.
func (r *rig) signals(t *testing.T, orderID string) int {
	t.Helper()
	var wf string
	if err := r.Pool.QueryRow(context.Background(), `SELECT workflow_id FROM orders WHERE id = $1`, orderID).Scan(&wf); err != nil {
		t.Fatal(err)
	}
	var n int
	var err error
	for deadline := time.Now().Add(time.Minute); ; {
		if n, err = r.signalsOf(wf); err == nil || time.Now().After(deadline) {
			break
		}
		t.Logf("history of %s: %v; reading again", wf, err)
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// signalsOf reads the workflow's history once.
func (r *rig) signalsOf(wf string) (int, error) {
	n := 0
	it := r.Temporal.GetWorkflowHistory(context.Background(), wf, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return 0, err
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
			n++
		}
	}
	return n, nil
}

// event is one of the sandbox's events about an intent, by type, as delivered.
func (r *rig) event(t *testing.T, intentID, typ string) []byte {
	t.Helper()
	for _, ev := range r.Sim.Events() {
		if bytes.Contains(ev, []byte(`"id":"`+intentID+`"`)) && bytes.Contains(ev, []byte(`"type":"`+typ+`"`)) {
			return ev
		}
	}
	t.Fatalf("no %s event for %s", typ, intentID)
	return nil
}

// deliver posts an event to an API as the provider would, signed with secret at t.
func deliver(t *testing.T, apiAddr string, body []byte, at time.Time, secrets ...string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+apiAddr+"/webhooks/stripe", bytes.NewReader(body))
	req.Header.Set("Stripe-Signature", sandbox.Sign(body, at, secrets...))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The three ends of a 3-D Secure payment, each with the sandbox's webhooks
// (duplicated, delayed, reordered) and the ledger.
func TestChaosThreeDSecure(t *testing.T) {
	t.Parallel()
	for _, row := range []struct {
		name    string
		outcome string // "" for a customer who never acts
		want    order.Status
		net     int64
	}{
		{"authenticated after 8s", "complete", order.StatusPaid, 500},
		{"abandoned: cancelled at the timeout", "", order.StatusCancelled, 0},
		{"authentication failed", "fail", order.StatusPaymentDeclined, 0},
	} {
		t.Run(row.name, func(t *testing.T) {
			r := newRig(t)
			r.withWebhooks("1m")
			r.apiEnv["PAYMENT_ACTION_TIMEOUT"] = "15s"
			r.startWorker(t, map[string]string{"PAYMENTS_RETURN_URL": "https://shop.example/return"})
			r.startAPI(t)
			id, pi := r.awaitCustomer(t, "3ds")
			if r.nextAction != "redirect_to_url" {
				t.Fatalf("next action %s: the confirm named a return URL", r.nextAction)
			}
			if row.outcome == "" {
				r.settledLedger(t, "3-D Secure: "+row.name, id, row.want, row.net)
				if in := r.Sim.Intents(id); len(in) != 1 || in[0].Status != "canceled" {
					t.Fatalf("intents %+v: want the one intent canceled", in)
				}
				return
			}
			// Between the poll's reads at 5 s and 15 s into the wait: the webhook, not
			// the poll, is what wakes the order.
			time.Sleep(8 * time.Second)
			acted := r.customerActs(t, pi, row.outcome)
			settled := r.statusAt(t, id, row.want, time.Minute)
			r.settledLedger(t, "3-D Secure: "+row.name, id, row.want, row.net)
			r.checkWakes(t, id, pi, true)
			t.Logf("%s: settled %s after the customer acted (webhooks; poll 1m)", row.name, settled.Sub(acted).Round(time.Millisecond))
		})
	}
}

// One event delivered 100 times at once, across two API processes, each delivery
// retried on 409 as the provider does: one handling, one wake-up, one charge.
func TestChaosWebhookDeliveredHundredTimesAcrossTwoAPIs(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.withWebhooks("10m")
	r.Sim.SetWebhooks(sandbox.Webhooks{}) // the test delivers
	r.startWorker(t, nil)
	r.startAPI(t)
	second, secondOps := stacktest.FreeAddr(t), stacktest.FreeAddr(t)
	r.startAPIOn(t, second, secondOps, "0s")
	id, pi := r.awaitCustomer(t, "hundred")
	r.betweenPollReads(t, id)
	r.customerActs(t, pi, "complete")
	body := r.event(t, pi, "payment_intent.succeeded")
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[int]int{}
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr := []string{r.apiAddr, second}[i%2]
			for attempt := 0; ; attempt++ {
				status := deliver(t, addr, body, time.Now(), webhookSecret)
				mu.Lock()
				answers[status]++
				mu.Unlock()
				if status != http.StatusConflict || attempt == 50 {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	r.statusAt(t, id, order.StatusPaid, time.Minute)
	r.settledLedger(t, "webhook: one event 100 times over 2 APIs", id, order.StatusPaid, 500)
	outcomes, deliveries := r.webhookOutcomes(t, pi)
	signals := r.signals(t, id)
	t.Logf("answers %v; outcomes %v over %d deliveries; %d signals", answers, outcomes, deliveries, signals)
	if answers[200] != 100 || len(outcomes) != 1 || outcomes[0] != "woke" || deliveries != answers[200]+answers[409] || signals != 1 {
		t.Fatalf("answers %v, outcomes %v, deliveries %d, signals %d: want 100 acknowledged, one handling, one signal", answers, outcomes, deliveries, signals)
	}
}

// betweenPollReads waits until the order's fallback poll has just read its
// intent and its next read is more than 5 s away (after the reads at once and
// 5 s on, the next is 10 s away): an event delivered now is what wakes the
// order, even on a busy machine, where the deliveries may take longer than the
// poll's first pause.
func (r *rig) betweenPollReads(t *testing.T, orderID string) {
	t.Helper()
	var wf string
	if err := r.Pool.QueryRow(context.Background(), `SELECT workflow_id FROM orders WHERE id = $1`, orderID).Scan(&wf); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, time.Minute, "the poll's second read of the intent", func() bool {
		desc, err := r.Temporal.DescribeWorkflow(context.Background(), wf, "")
		if err != nil {
			return false
		}
		for _, pa := range desc.RawResponse.GetPendingActivities() {
			next := pa.GetNextAttemptScheduleTime()
			if pa.GetActivityType().GetName() == "AwaitIntent" && next != nil && time.Until(next.AsTime()) > 5*time.Second {
				return true
			}
		}
		return false
	})
}

// rewrite turns a genuine event into another about the same intent: a new event
// ID and type, its object's status changed; signed with the right secret, so only
// the intent itself can say it is stale.
func rewrite(t *testing.T, ev []byte, typ, status string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev, &m); err != nil {
		t.Fatal(err)
	}
	m["id"], m["type"] = fmt.Sprintf("evt_late%d", time.Now().UnixNano()), typ
	m["data"].(map[string]any)["object"].(map[string]any)["status"] = status
	out, _ := json.Marshal(m)
	return out
}

// Events out of order: a payment_failed that arrives after the intent succeeded
// changes nothing, and a succeeded that arrives while the customer has not acted
// charges nothing: the order follows the intent as the provider holds it.
func TestChaosWebhooksOutOfOrder(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.withWebhooks("10m")
	r.startWorker(t, nil)
	r.startAPI(t)

	paid, paidIntent := r.awaitCustomer(t, "late-failure")
	r.customerActs(t, paidIntent, "complete")
	r.statusAt(t, paid, order.StatusPaid, time.Minute)
	late := rewrite(t, r.event(t, paidIntent, "payment_intent.succeeded"), "payment_intent.payment_failed", "requires_payment_method")
	if status := deliver(t, r.apiAddr, late, time.Now(), webhookSecret); status != 200 {
		t.Fatalf("late payment_failed: %d", status)
	}

	waiting, waitingIntent := r.awaitCustomer(t, "early-success")
	early := rewrite(t, r.event(t, waitingIntent, "payment_intent.requires_action"), "payment_intent.succeeded", "succeeded")
	if status := deliver(t, r.apiAddr, early, time.Now(), webhookSecret); status != 200 {
		t.Fatalf("early succeeded: %d", status)
	}
	time.Sleep(2 * time.Second)
	if r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND status = 'PAYMENT_ACTION_REQUIRED'`, waiting) != 1 ||
		len(r.Sim.ChargesForOrder(waiting)) != 0 {
		t.Fatal("a succeeded event for an intent still waiting on its customer moved the order")
	}
	r.customerActs(t, waitingIntent, "fail")
	r.statusAt(t, waiting, order.StatusPaymentDeclined, time.Minute)
	if r.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND status = 'PAID'`, paid) != 1 ||
		len(r.Sim.ChargesForOrder(paid)) != 1 || len(r.Sim.Refunds()) != 0 || len(r.Sim.ChargesForOrder(waiting)) != 0 {
		t.Fatal("a stale event changed an order")
	}
	balanced, pending := r.payments(t)
	line := fmt.Sprintf("%-44s orders=2 charges=%d payments-net=amount:%d/2 pending-payments=%d",
		"webhook: events out of order", len(r.Sim.Charges("")), balanced, pending)
	t.Log(line)
	appendSummary(line)
	if balanced != 2 || pending != 0 {
		t.Fatalf("ledger does not balance: %s", line)
	}
}

// Forged, wrongly signed and replayed deliveries are refused and change nothing; a
// rotated secret is accepted while both are configured.
func TestChaosWebhookSignatures(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.withWebhooks("10m", "whsec_chaos_previous", webhookSecret)
	r.Sim.SetWebhooks(sandbox.Webhooks{}) // the test delivers
	r.startWorker(t, nil)
	r.startAPI(t)
	id, pi := r.awaitCustomer(t, "signatures")
	r.customerActs(t, pi, "complete")
	body := r.event(t, pi, "payment_intent.succeeded")

	forged := func(b []byte, _ time.Time, _ ...string) string {
		return "t=" + fmt.Sprint(time.Now().Unix()) + ",v1=" + strings.Repeat("ab", 32)
	}
	for _, row := range []struct {
		name   string
		header func([]byte, time.Time, ...string) string
		at     time.Time
		secret string
	}{
		{"forged signature", forged, time.Now(), webhookSecret},
		{"wrong secret", sandbox.Sign, time.Now(), "whsec_someone_else"},
		{"genuine, replayed after the tolerance", sandbox.Sign, time.Now().Add(-6 * time.Minute), webhookSecret},
		{"unsigned", func([]byte, time.Time, ...string) string { return "" }, time.Now(), ""},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.apiAddr+"/webhooks/stripe", bytes.NewReader(body))
		req.Header.Set("Stripe-Signature", row.header(body, row.at, row.secret))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("%s: %d, want 400", row.name, resp.StatusCode)
		}
	}
	huge := append(bytes.Repeat([]byte(" "), 300<<10), body...)
	if status := deliver(t, r.apiAddr, huge, time.Now(), webhookSecret); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 300 KiB event: %d", status)
	}
	var ev struct{ ID string }
	_ = json.Unmarshal(body, &ev)
	if n := r.count(t, `SELECT count(*) FROM webhook_events WHERE event_id = $1`, ev.ID); n != 0 {
		t.Fatalf("%d webhook rows after refused deliveries", n)
	}
	// Only a delivery signals the order's workflow; its own reads of the intent,
	// on their backoff, may pay it meanwhile.
	time.Sleep(time.Second)
	if n := r.signals(t, id); n != 0 {
		t.Fatalf("a refused delivery reached the order: %d signals", n)
	}
	// The rotation's overlap: the previous secret alone, then the current one.
	previous := rewrite(t, body, "payment_intent.succeeded", "succeeded")
	if status := deliver(t, r.apiAddr, previous, time.Now(), "whsec_chaos_previous"); status != 200 {
		t.Fatalf("signed with the previous secret: %d", status)
	}
	if status := deliver(t, r.apiAddr, body, time.Now(), webhookSecret); status != 200 {
		t.Fatalf("signed with the current secret: %d", status)
	}
	r.statusAt(t, id, order.StatusPaid, time.Minute)
	r.settledLedger(t, "webhook: forged, wrong, replayed, rotated", id, order.StatusPaid, 500)
}

// The API is SIGKILLed while it handles a delivery (its read of the intent held
// 20 s): the sandbox delivers again, the claim of the dead process expires, and
// the event is handled once.
func TestChaosWebhookAPIKilledWhileHandling(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.withWebhooks("10m")
	r.Sim.SetWebhooks(sandbox.Webhooks{URL: "http://" + r.apiAddr + "/webhooks/stripe", Secrets: []string{webhookSecret}, RetryMS: 500})
	r.startWorker(t, nil)
	api := r.startAPI(t)
	id, pi := r.awaitCustomer(t, "killed")
	began := time.Now()
	// Every read of an intent takes 20 s until the kill, the worker's polls too:
	// the API is surely killed while it handles the delivery.
	r.Sim.SetFaults(sandbox.Faults{Only: "retrieve", LatencyMS: 20000})
	r.customerActs(t, pi, "complete")
	var killed string
	stacktest.Eventually(t, 30*time.Second, "a delivery being handled", func() bool {
		err := r.Pool.QueryRow(context.Background(), `SELECT event_id FROM webhook_events
			WHERE outcome IS NULL AND locked_until > now() AND received_at > $1 LIMIT 1`, began).Scan(&killed)
		return err == nil
	})
	api.Kill(t)
	r.Sim.SetFaults(sandbox.Faults{})
	r.startAPI(t)
	r.statusAt(t, id, order.StatusPaid, 2*time.Minute)
	var deliveries int
	var outcome string
	stacktest.Eventually(t, 2*time.Minute, "the killed delivery's event handled", func() bool {
		err := r.Pool.QueryRow(context.Background(), `SELECT deliveries, COALESCE(outcome, '') FROM webhook_events WHERE event_id = $1`,
			killed).Scan(&deliveries, &outcome)
		return err == nil && outcome != ""
	})
	r.settledLedger(t, "webhook: API SIGKILLed while handling", id, order.StatusPaid, 500)
	if deliveries < 2 {
		t.Fatalf("the killed delivery's event: %d deliveries, outcome %s", deliveries, outcome)
	}
	r.checkWakes(t, id, pi, false)
	t.Logf("the killed delivery's event: %d deliveries, handled once (%s)", deliveries, outcome)
}

// The webhook endpoint is down the whole time (nothing listens where the sandbox
// delivers) while 3-D Secure orders complete: every order settles by the poll.
func TestChaosWebhookEndpointDownOrdersSettleByThePoll(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.withWebhooks("3s")
	r.Sim.SetWebhooks(sandbox.Webhooks{URL: "http://" + stacktest.FreeAddr(t) + "/webhooks/stripe", Secrets: []string{webhookSecret}, RetryMS: 200})
	r.startWorker(t, nil)
	r.startAPI(t)
	type waiter struct{ id, pi string }
	var orders []waiter
	for i := range 4 {
		id, pi := r.awaitCustomer(t, fmt.Sprintf("down-%d", i))
		orders = append(orders, waiter{id, pi})
	}
	var lags []time.Duration
	for _, o := range orders {
		acted := r.customerActs(t, o.pi, "complete")
		lags = append(lags, r.statusAt(t, o.id, order.StatusPaid, time.Minute).Sub(acted))
	}
	if st := r.Sim.WebhookStats(); st.Delivered != 0 || st.Attempts == 0 {
		t.Fatalf("webhook stats %+v: want attempts and no delivery", st)
	}
	balanced, pending := r.payments(t)
	line := fmt.Sprintf("%-44s orders=4 charges=%d payments-net=amount:%d/4 pending-payments=%d",
		"webhook: endpoint down, settled by the poll", len(r.Sim.Charges("")), balanced, pending)
	t.Log(line, "lags", lags)
	appendSummary(line)
	if balanced != 4 || pending != 0 || len(r.Sim.Charges("")) != 4 {
		t.Fatalf("ledger does not balance: %s", line)
	}
}

// rss is a process's resident memory, from /proc.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// 2,000 connections each send an unsigned 256 KiB webhook body and hold its
// last byte, as anyone on the internet can. The endpoint reads 64 bodies at a
// time before a signature is checked and tells the rest to come back, so the
// API stays far below the manifests' 256 MiB (before: 1,061 MiB); orders placed
// meanwhile are paid.
func TestChaosSlowUnsignedWebhookBodies(t *testing.T) {
	const conns, bound = 2000, 200 << 20
	r := newRig(t)
	r.withWebhooks("1s")
	r.startWorker(t, nil)
	api := r.startAPI(t)
	before := rss(t, api.Pid())
	body := strings.Repeat("x", 256<<10-1)
	head := fmt.Sprintf("POST /webhooks/stripe HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nStripe-Signature: t=%d,v1=00\r\nContent-Length: %d\r\n\r\n",
		time.Now().Unix(), 256<<10)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	var peak int64
	for i := range conns {
		c, err := net.Dial("tcp", r.apiAddr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		held = append(held, c)
		_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, _ = io.WriteString(c, head+body) // refused ones are closed under it
		if i%100 == 99 {
			peak = max(peak, rss(t, api.Pid()))
		}
	}
	for range 20 {
		peak = max(peak, rss(t, api.Pid()))
		time.Sleep(100 * time.Millisecond)
	}
	r.order(t, "during-slow-bodies")
	r.ledger(t, fmt.Sprintf("webhooks: %d slow unsigned 256 KiB bodies (API RSS %d MiB, peak %d MiB)", conns, before>>20, peak>>20))
	if peak > bound {
		t.Fatalf("the API's RSS peaked at %d MiB, over %d MiB", peak>>20, bound>>20)
	}
}
