//go:build stack

package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/workertest"
)

// The README's first order, as a newcomer pastes it: every shell block between "A
// first order" and "The commands" runs as written, with API and KEY as make run
// prints them, against an API and a worker on the stack's topics.
func TestQuickStartAsWritten(t *testing.T) {
	blocks := quickStart(t)
	h := workertest.NewOrders(t)
	key, err := apikeys.New(h.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	workerEnv := h.WorkerEnv()
	workerEnv["EVENTS_TOPIC"], workerEnv["REQUESTS_TOPIC"] = "orders.events", "orders.requested"
	workerEnv["CONSUMER_GROUP"], workerEnv["OPS_ADDR"] = stacktest.Name("quickstart"), stacktest.FreeAddr(t)
	stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), workerEnv)

	addr, ops := stacktest.FreeAddr(t), stacktest.FreeAddr(t)
	vars := testkit.Connections(h.Env, map[string]string{"TASK_QUEUE": h.Queue, "API_ADDR": addr, "OPS_ADDR": ops,
		"DRAIN_DELAY": "0s", "PAYMENTS_URL": h.SimURL, "LOG_LEVEL": "warn"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var logs bytes.Buffer
	go func() { done <- app(func(k string) string { return vars[k] }, &logs, &logs).Run(ctx, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	stacktest.Eventually(t, 30*time.Second, "the API to be ready", func() bool {
		resp, err := http.Get("http://" + ops + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})

	var out strings.Builder
	for i, block := range blocks {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "API=http://"+addr, "KEY="+key)
		b, err := cmd.CombinedOutput()
		t.Logf("block %d:\n%s", i+1, b)
		if err != nil {
			t.Fatalf("block %d of the README's quick start failed: %v", i+1, err)
		}
		out.Write(b)
	}
	for _, want := range []string{`"status":"PAID"`, "idempotent-replayed: true", "\n422\n",
		`"type":"OrderPaid","orderId":"` + order.IDFor(order.WorkflowID("demo", order.FromEvent, "first-event"))} {
		if !strings.Contains(strings.ToLower(out.String()), strings.ToLower(want)) {
			t.Errorf("the quick start's output lacks %q", want)
		}
	}
	for what, wf := range map[string]string{
		"the event's order":      order.WorkflowID("demo", order.FromEvent, "first-event"),
		"the CloudEvent's order": order.WorkflowID("demo", order.FromCloudEvent, order.CloudEventKey("/shop/checkout", "checkout-42")),
	} {
		id := order.IDFor(wf)
		stacktest.Eventually(t, time.Minute, what, func() bool {
			var n int
			return h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE id = $1`, id).Scan(&n) == nil && n == 1
		})
	}
}

// quickStart is the shell blocks of the README's "A first order" section.
func quickStart(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	from, to := strings.Index(s, "\n## A first order\n"), strings.Index(s, "\n## The commands\n")
	if from < 0 || to < from {
		t.Fatal(`README: no "A first order" section before "The commands"`)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(s[from:to], -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) < 2 {
		t.Fatalf("README's quick start has %d shell blocks, want the order's and the event's", len(blocks))
	}
	return blocks
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}
