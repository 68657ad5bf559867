//go:build stack

package worker_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// An operator, in Chromium, works an incident in the worker's console: before
// logging in every page is the login form and shows nothing; logged in, they find
// a tenant's stuck order by status and open its timeline, see an event that was
// dead-lettered (its tenant did not exist yet), redrive it once the tenant exists
// and see its order appear, and acknowledge an old finding, which leaves the
// list of open ones.
func TestConsoleWalksAnOperatorThroughAnIncident(t *testing.T) {
	h := newHarness(t)
	bin := h.Env["ORDERFLOW_CHROMIUM"]
	if bin == "" {
		t.Fatal("the stack's env has no ORDERFLOW_CHROMIUM: run scripts/stack up")
	}
	ctx := context.Background()
	stuck := h.stuckOrder(t, ctx)
	finding := h.oldFinding(t, ctx, stuck)
	late := stacktest.Name("late")
	base, requests := h.consoleWorker(t)
	w := &kafka.Writer{Addr: kafka.TCP(h.Kafka.Brokers...), Topic: requests, Transport: h.Kafka.Transport(), BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte(fmt.Sprintf(`{"eventId":"ev-console","tenant":%q,"order":%s}`, late, consoleOrderJSON))}); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, bin)
	// The browser lives as long as the context of its first action: no timeout.
	if err := chromedp.Do(b.ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"/orders?tenant=" + h.tenant, "/orders/" + stuck.ID, "/dlq", "/findings"} {
		if text := b.waitFor(t, base+page, []string{"Operator token"}, 30*time.Second); strings.Contains(text, stuck.ID) || strings.Contains(text, h.tenant) ||
			!strings.Contains(text, "Operator token") {
			t.Fatalf("%s before logging in shows:\n%s", page, text)
		}
	}
	b.run(t, chromedp.Navigate(base+"/login"), chromedp.SendKeys(`input[name=token]`, consoleToken), chromedp.Submit(`input[name=token]`),
		chromedp.WaitVisible(`#orders`))

	b.until(t, base+"/orders?tenant="+h.tenant+"&status=PAYMENT_PENDING", stuck.ID)
	b.run(t, chromedp.Click(`a[href="/orders/`+stuck.ID+`"]`), chromedp.WaitVisible(`#timeline`))
	if text := b.text(t); !strings.Contains(text, string(order.StatusPaymentPending)) || !strings.Contains(text, "Timeline") {
		t.Fatalf("the stuck order's page:\n%s", text)
	}

	b.until(t, base+"/dlq", requests+"/0@0")
	if _, err := apikeys.New(h.Pool, apikeys.DefaultCacheTTL).Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	b.run(t, chromedp.Click(`form[action="/dlq/redrive"] button`), chromedp.WaitVisible(`#summary`))
	if text := b.text(t); !strings.Contains(text, "redriven: 1") {
		t.Fatalf("after the redrive:\n%s", text)
	}
	b.until(t, base+"/orders?tenant="+late, order.IDFor(order.WorkflowID(late, order.FromEvent, "ev-console")))

	row := fmt.Sprintf("#finding-%d", finding)
	b.until(t, base+"/findings", fmt.Sprintf("%d", finding))
	b.submit(t, chromedp.SendKeys(row+` input[name=by]`, "ana"), chromedp.Click(row+` button`))
	var acked []reconcile.Finding
	stacktest.Eventually(t, 30*time.Second, "the finding acknowledged", func() bool {
		var err error
		acked, err = reconcile.NewStore(h.Pool).List(ctx, reconcile.Filter{OrderID: stuck.ID, Limit: 10})
		return err == nil && len(acked) == 1 && acked[0].AckedAt != nil
	})
	b.run(t, chromedp.Navigate(base+"/findings"), chromedp.WaitVisible(`#findings`))
	present, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, row)))
	if err != nil || present || acked[0].AckedBy != "ana" {
		t.Fatalf("finding %d after acknowledging: still listed %v, stored %+v (%v)", finding, present, acked, err)
	}
}

const (
	consoleToken     = "console-token-0123456789abcdef"
	consoleOrderJSON = `{"customer_id":"cus_1","currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":100}],"payment_method":"pm_card_visa"}`
)

// consoleWorker runs a worker whose consumer reads a requests topic of its own
// (and dead-letters to another), with its console on; it returns the console's
// URL and the requests topic.
func (h *harness) consoleWorker(t *testing.T) (string, string) {
	t.Helper()
	requests, dlq, addr := stacktest.Topic(t, 1), stacktest.Topic(t, 1), stacktest.FreeAddr(t)
	env := h.WorkerEnv()
	maps.Copy(env, map[string]string{"CONSOLE_ADDR": addr, "CONSOLE_TOKENS": consoleToken, "REQUESTS_TOPIC": requests, "DLQ_TOPIC": dlq,
		"CONSUMER_GROUP": stacktest.Name("console"), "TENANT_CACHE_TTL": "1s"})
	stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), env)
	base := "http://" + addr
	stacktest.Eventually(t, 30*time.Second, "the console to answer", func() bool {
		resp, err := http.Get(base + "/login")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	return base, requests
}

// stuckOrder is an order of the harness's tenant left PAYMENT_PENDING.
func (h *harness) stuckOrder(t *testing.T, ctx context.Context) order.Order {
	t.Helper()
	_, in := h.placeOrder(stacktest.Name("stuck"), "pm_card_visa")
	store := orderstore.New(h.Pool)
	if err := store.Insert(ctx, in.Order); err != nil {
		t.Fatal(err)
	}
	if err := store.Move(ctx, in.Order.ID, order.StatusPaymentPending, "", ""); err != nil {
		t.Fatal(err)
	}
	return in.Order
}

// oldFinding records a finding on the order, found long ago, so the oldest-first
// list of open findings shows it first.
func (h *harness) oldFinding(t *testing.T, ctx context.Context, o order.Order) int64 {
	t.Helper()
	if _, err := reconcile.NewStore(h.Pool).Record(ctx, reconcile.Finding{Kind: reconcile.KindUnchecked, Action: reconcile.ActionReported,
		OrderID: o.ID, Tenant: o.Tenant, Detail: "console test"}); err != nil {
		t.Fatal(err)
	}
	// Old, but within FINDINGS_RETENTION (90 days): the pruners of the stack's
	// other workers and tests keep it.
	var id int64
	if err := h.Pool.QueryRow(ctx, `UPDATE reconcile_findings SET found_at = now() - interval '89 days' WHERE order_id = $1 RETURNING id`, o.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func (c *chromium) run(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v\n%s", err, c.text(t))
	}
}

// submit runs actions that send a form, and waits for the page its answer
// leads to: opening another page before it has loaded aborts one of the two.
func (c *chromium) submit(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		t.Fatalf("browser: %v\n%s", err, c.text(t))
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("the form's answer led to %s: %d\n%s", resp.URL, resp.Status, c.text(t))
	}
}

func (c *chromium) text(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	return s
}

// until opens url again every second until its text holds want.
func (c *chromium) until(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		text := c.waitFor(t, url, []string{want}, 5*time.Second)
		if strings.Contains(text, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed %q:\n%s", url, want, text)
		}
		time.Sleep(time.Second)
	}
}
