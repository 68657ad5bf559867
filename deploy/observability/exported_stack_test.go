//go:build stack

package observability_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/platform/kafkaclient"
	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit"
	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/worker/workertest"
)

const orderJSON = `{"customer_id":"cus_1","currency":"USD","items":[{"sku":"a","quantity":1,"unit_amount":100}],"payment_method":"pm_card_visa"}`

// Every metric the dashboard and the alert rules name is exported by a running
// api or worker, once they have seen the traffic the panels describe: an HTTP order,
// its replay and a refused reuse of its key, an event and its duplicate, and a
// poison message.
func TestEveryNamedMetricIsExported(t *testing.T) {
	h := workertest.NewOrders(t)
	tenant, group := stacktest.Name("tenant"), stacktest.Name("group")
	requests, dlq := stacktest.Topic(t, 2), stacktest.Topic(t, 1)
	key, err := apikeys.New(h.Pool, time.Minute).Create(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	workerOps, apiAddr, apiOps := stacktest.FreeAddr(t), stacktest.FreeAddr(t), stacktest.FreeAddr(t)
	env := h.WorkerEnv()
	env["OPS_ADDR"], env["REQUESTS_TOPIC"], env["DLQ_TOPIC"], env["CONSUMER_GROUP"] = workerOps, requests, dlq, group
	stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), env)
	stacktest.Start(t, stacktest.Binary(t, "cmd/api"), testkit.Connections(h.Env, map[string]string{
		"TASK_QUEUE": h.Queue, "API_ADDR": apiAddr, "OPS_ADDR": apiOps, "DRAIN_DELAY": "0s",
		"PAYMENTS_URL": h.SimURL, "PAYMENTS_WEBHOOK_SECRETS": "whsec_exported",
		// A budget the test spends, so that a 429 is counted (by tenant).
		"TENANT_RATE": "1", "TENANT_BURST": "4",
	}))
	for _, u := range []string{"http://" + workerOps + "/readyz", "http://" + apiOps + "/readyz"} {
		stacktest.Eventually(t, 30*time.Second, u, func() bool { return get(u) == http.StatusOK })
	}

	for i, b := range []string{orderJSON, orderJSON, strings.Replace(orderJSON, "100", "200", 1)} {
		if code := post(t, "http://"+apiAddr+"/v1/orders", key, "k1", b); code != []int{202, 202, 422}[i] {
			t.Fatalf("POST %d: %d", i, code)
		}
	}
	// Requests past the tenant's budget: refused, and counted.
	refused := false
	for range 20 {
		if get429(t, "http://"+apiAddr+"/v1/orders", key) {
			refused = true
			break
		}
	}
	if !refused {
		t.Fatal("20 requests at once were all within a budget of 1 a second, burst 4")
	}
	// A delivery whose signature is not ours: refused, and counted.
	if code := post(t, "http://"+apiAddr+"/webhooks/stripe", "", "", `{"id":"evt_1"}`); code != http.StatusBadRequest {
		t.Fatalf("an unsigned webhook: %d", code)
	}
	w := kafkaclient.NewWriter(h.Kafka, requests)
	defer w.Close()
	ev := []byte(fmt.Sprintf(`{"eventId":"e1","tenant":%q,"order":%s}`, tenant, orderJSON))
	if err := w.WriteMessages(context.Background(), kafka.Message{Value: ev}, kafka.Message{Value: ev}, kafka.Message{Value: []byte("{not json")}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, 60*time.Second, "two orders paid and one dead letter", func() bool {
		var paid int
		_ = h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE tenant = $1 AND status = 'PAID'`, tenant).Scan(&paid)
		fam := scrape(t, "http://"+workerOps+"/metrics")
		return paid == 2 && value(fam["orderflow_consumer_dead_lettered_total"]) == 1 && value(fam["orderflow_consumer_duplicates_total"]) == 1
	})

	// Some appear a moment after the orders are paid (a workflow's end-to-end
	// latency when it closes): ask until all are there, or report what is not.
	var missing []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		exported := scrape(t, "http://"+workerOps+"/metrics")
		for name, f := range scrape(t, "http://"+apiOps+"/metrics") {
			exported[name] = f
		}
		missing = missing[:0]
		for where, q := range queries(t) {
			for _, name := range metricNames(t, where, q) {
				if !isExported(exported, name) {
					missing = append(missing, where+" names "+name)
				}
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The SDK exports a failure's metric only once one happens: such a name must
	// be one the SDK defines, as this exporter names it.
	sdk := sdkMetricNames(t)
	for _, m := range missing {
		name := m[strings.LastIndex(m, " ")+1:]
		if !sdk[name] {
			t.Errorf("%s, which neither binary exports nor the SDK defines", m)
		}
	}
}

// isExported: name is a family, or a histogram's _bucket, _sum or _count.
func isExported(fams map[string]*dto.MetricFamily, name string) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := fams[base]; ok && f.GetType() == dto.MetricType_HISTOGRAM {
				return true
			}
		}
	}
	return false
}

func value(f *dto.MetricFamily) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return sum
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return fams
}

func get(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func post(t *testing.T, url, apiKey, key, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// get429 sends GET url with the API key and reports whether it was refused 429.
func get429(t *testing.T, url, apiKey string) bool {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusTooManyRequests
}
