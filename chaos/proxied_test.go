//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orderflow/orderflow/tenants/apikeys"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// ingressProxy stands for the ingress controller in front of the API: it sends
// each request to the API process pick names and appends the client's address
// to X-Forwarded-For, as nginx and Envoy do.
func ingressProxy(t *testing.T, pick func() string) *httptest.Server {
	px := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(&url.URL{Scheme: "http", Host: pick()})
		pr.SetXForwarded()
	}, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	srv := httptest.NewServer(px)
	t.Cleanup(srv.Close)
	return srv
}

// from is an HTTP client whose connections come from the loopback address ip.
func from(ip string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext,
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

// Behind a proxy that every client reaches the API through (TRUSTED_PROXIES
// names it), one client (127.0.0.2) floods two API processes with made-up keys
// over 2,000 connections. During the flood a tenant's key is created and a
// third API process started; the key's first request, from another client
// (127.0.0.3), through the proxy to the new process, is answered 200. Before,
// every request came from the proxy's address and shared its bound on unknown
// keys, and the new key was refused with 503.
func TestChaosAnonymousFloodBehindAProxyNeverLocksANewKeyOut(t *testing.T) {
	const conns, d = 2000, 15 * time.Second
	r := newRig(t)
	r.apiEnv = map[string]string{"TRUSTED_PROXIES": "127.0.0.1"}
	var mu sync.Mutex
	var apis []string
	for range 2 {
		addr := stacktest.FreeAddr(t)
		r.startAPIOn(t, addr, stacktest.FreeAddr(t), "0s")
		apis = append(apis, addr)
	}
	var turn int
	flooded := ingressProxy(t, func() string {
		mu.Lock()
		defer mu.Unlock()
		turn++
		return apis[turn%len(apis)]
	})
	f := madeUpKeys(from("127.0.0.2", conns), flooded.URL, conns, time.Now().Add(d))
	stacktest.Eventually(t, 10*time.Second, "the flood to fill the lookups", func() bool { return f.busy.Load() > 0 })
	tenant := stacktest.Name("tenant")
	key, err := apikeys.New(r.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	fresh := stacktest.FreeAddr(t)
	r.startAPIOn(t, fresh, stacktest.FreeAddr(t), "0s")
	mu.Lock()
	apis = append(apis, fresh) // the flood reaches it too
	mu.Unlock()
	toFresh := ingressProxy(t, func() string { return fresh })
	req, _ := http.NewRequest(http.MethodGet, toFresh.URL+"/v1/orders?limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := from("127.0.0.3", 1).Do(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
		resp.Body.Close()
	}
	f.wg.Wait()
	summary(t, fmt.Sprintf("%-44s made-up keys=%d busy=%d new key's first request=%d", "anonymous flood behind a proxy", f.sent.Load(), f.busy.Load(), status))
	if err != nil || status != http.StatusOK {
		t.Fatalf("the new key's first request on a fresh API process during the flood: %d, %v; want 200", status, err)
	}
	if f.sent.Load() < conns {
		t.Fatalf("only %d made-up keys sent: the flood was not caused", f.sent.Load())
	}
}

// Behind a proxy that appends the client to X-Forwarded-For and passes other
// headers on as sent, as nginx does (TRUSTED_PROXIES names it,
// TRUSTED_PROXY_HEADER is left at X-Forwarded-For), one client (127.0.0.2)
// floods the API with made-up keys over 2,000 connections, each request with a
// Forwarded header of its own naming a new address. Keys created during the
// flood, one after another (ten at least), are each answered 200 on their
// first request from another client (127.0.0.3) through the proxy. Before,
// the API believed the forged Forwarded: every request had an address of its
// own and escaped the per-address bound on unknown keys, and new keys were
// refused with 503.
func TestChaosForgedForwardedBehindAProxyNeverLocksANewKeyOut(t *testing.T) {
	const conns, d, keys, minKeys = 2000, 40 * time.Second, 20, 10
	r := newRig(t)
	r.apiEnv = map[string]string{"TRUSTED_PROXIES": "127.0.0.1"}
	api := stacktest.FreeAddr(t)
	r.startAPIOn(t, api, stacktest.FreeAddr(t), "0s")
	px := ingressProxy(t, func() string { return api })
	// The flood comes from the proxy's address with the proxy's word on its
	// client, as the proxy would send it, so the test's proxy does not bound it.
	flooder := from("127.0.0.1", conns)
	flooder.Transport = &forging{base: flooder.Transport, client: "127.0.0.2"}
	stop := time.Now().Add(d)
	f := madeUpKeys(flooder, "http://"+api, conns, stop)
	stacktest.Eventually(t, 10*time.Second, "the flood to fill the lookups", func() bool { return f.busy.Load() > 0 })
	client := from("127.0.0.3", 1)
	var statuses []int
	for len(statuses) < keys {
		key, err := apikeys.New(r.Pool, apikeys.DefaultCacheTTL).Create(context.Background(), stacktest.Name("tenant"))
		if err != nil {
			t.Fatal(err)
		}
		status := firstRequest(client, px.URL, key)
		if time.Now().After(stop) {
			break // answered after the flood: no trial
		}
		statuses = append(statuses, status)
	}
	f.wg.Wait()
	summary(t, fmt.Sprintf("%-44s made-up keys=%d busy=%d new keys' first requests=%v", "forged Forwarded behind a proxy", f.sent.Load(), f.busy.Load(), statuses))
	if len(statuses) < minKeys {
		t.Fatalf("only %d new keys tried during the flood, want %d", len(statuses), minKeys)
	}
	for i, status := range statuses {
		if status != http.StatusOK {
			t.Errorf("new key %d's first request during the flood: %d, want 200", i, status)
		}
	}
	if f.sent.Load() < conns {
		t.Fatalf("only %d made-up keys sent: the flood was not caused", f.sent.Load())
	}
}

// forging writes a Forwarded header of its own on every request, naming a new
// address each time, as a client after a bound of its own per request does.
type forging struct {
	base   http.RoundTripper
	client string // the address the proxy appended to X-Forwarded-For
	n      atomic.Int64
}

func (f *forging) RoundTrip(req *http.Request) (*http.Response, error) {
	n := f.n.Add(1)
	req = req.Clone(req.Context())
	req.Header.Set("X-Forwarded-For", f.client)
	req.Header.Set("Forwarded", fmt.Sprintf(`for="[2001:db8::%x:%x]"`, n>>16&0xffff, n&0xffff))
	return f.base.RoundTrip(req)
}

// firstRequest is the status of GET /v1/orders with key through base, 0 when
// no answer came.
func firstRequest(c *http.Client, base, key string) int {
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/orders?limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// flood is a flood of made-up API keys under way: wg ends with it.
type flood struct {
	wg                  sync.WaitGroup
	sent, refused, busy atomic.Int64
}

// madeUpKeys sends GET /v1/orders with made-up keys over conns connections of
// c to base until stop, as anyone on the internet can, counting the answers.
func madeUpKeys(c *http.Client, base string, conns int, stop time.Time) *flood {
	f := &flood{}
	for conn := range conns {
		f.wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				req, _ := http.NewRequest(http.MethodGet, base+"/v1/orders", nil)
				req.Header.Set("Authorization", fmt.Sprintf("Bearer of_%06x%06x_madeup", conn, i&0xffffff))
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				f.sent.Add(1)
				switch resp.StatusCode {
				case http.StatusUnauthorized:
					f.refused.Add(1)
				case http.StatusServiceUnavailable:
					f.busy.Add(1)
				}
			}
		})
	}
	return f
}
