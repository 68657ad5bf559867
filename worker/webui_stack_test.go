//go:build stack

package worker_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orderflow/orderflow/testkit/stacktest"
	"github.com/orderflow/orderflow/workflows"
)

// The Temporal Web UI, in Chromium, shows a PAID order's input decrypted through
// the worker's codec (the stack's dev server points the UI at the worker's codec
// listener, with the stack's token in the path); served by a worker that holds
// another token, the same page shows none of it.
func TestWebUIShowsAPaidOrderDecryptedThroughTheCodec(t *testing.T) {
	h := newHarness(t)
	ui, codecAddr, browser := h.Env["TEMPORAL_UI_URL"], h.Env["ORDERFLOW_UI_CODEC_ADDR"], h.Env["ORDERFLOW_CHROMIUM"]
	if ui == "" {
		t.Skip("the Web UI runs with the dev server (the dev profile) only")
	}
	if codecAddr == "" || browser == "" {
		t.Fatal("the stack's env has no ORDERFLOW_UI_CODEC_ADDR or ORDERFLOW_CHROMIUM: run scripts/stack up")
	}
	worker := func(token string) *stacktest.Proc {
		env := h.WorkerEnv()
		env["CODEC_ADDR"], env["CODEC_TOKENS"], env["CODEC_CORS_ORIGIN"] = codecAddr, token, ui
		return stacktest.Start(t, stacktest.Binary(t, "cmd/worker"), env)
	}
	w := worker(h.Env["CODEC_TOKENS"])

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, in := h.placeOrder("webui", "pm_card_visa")
	in.Order.CustomerID = stacktest.Name("cus-webui")
	run := h.execute(t, ctx, id, in)
	var res workflows.OrderResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	page := ui + "/namespaces/" + h.Env["TEMPORAL_NAMESPACE"] + "/workflows/" + id + "/" + run.GetRunID() + "/history"

	// Every secret field of the order is in the page, decrypted, and the result
	// says PAID. The page decodes the input and the result each in a request of
	// its own, so it waits for all of them.
	wants := []string{`"customer_id": "` + in.Order.CustomerID + `"`, `"payment_method": "pm_card_visa"`, `"Status": "PAID"`}
	text := newBrowser(t, browser).waitFor(t, page, wants, time.Minute)
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Fatalf("the Web UI's page of a PAID order lacks %s:\n%s", want, text)
		}
	}

	// A codec that refuses the UI's token: the same page, in a new browser, shows
	// the payloads as the history holds them, encrypted (their encoding in base64).
	w.Kill(t)
	worker("another-codec-token-0123456789")
	encrypted := base64.StdEncoding.EncodeToString([]byte("binary/encrypted"))
	text = newBrowser(t, browser).waitFor(t, page, []string{encrypted}, time.Minute)
	if !strings.Contains(text, encrypted) || strings.Contains(text, in.Order.CustomerID) || strings.Contains(text, "pm_card_visa") {
		t.Fatalf("with the codec refusing the UI's token, the page shows:\n%s", text)
	}
}

type chromium struct{ ctx context.Context }

func newBrowser(t *testing.T, bin string) *chromium {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return &chromium{ctx}
}

// waitFor opens url and returns the page's text once it holds every one of
// wants, or when d has passed.
func (c *chromium) waitFor(t *testing.T, url string, wants []string, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, d)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	var text string
	for ctx.Err() == nil {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		if err == nil {
			text = got
		}
		if containsAll(text, wants) {
			return text
		}
		time.Sleep(250 * time.Millisecond)
	}
	return text
}

func containsAll(text string, wants []string) bool {
	for _, want := range wants {
		if !strings.Contains(text, want) {
			return false
		}
	}
	return true
}
