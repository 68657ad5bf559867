package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/platform/identity"
)

// heldIntake holds every Place until release is closed, counting them.
type heldIntake struct {
	placed  atomic.Int32
	release chan struct{}
}

func (h *heldIntake) Place(ctx context.Context, _, key string, _ intake.Request, _ time.Duration) intake.Result {
	h.placed.Add(1)
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return intake.Result{Kind: intake.Created, ID: "ord_" + key, Status: http.StatusAccepted, Body: []byte(`{}`)}
}

func (h *heldIntake) Get(context.Context, string, string) (wire.Order, error) {
	return wire.Order{}, nil
}

func (h *heldIntake) List(context.Context, string, intake.Filter) ([]wire.Order, string, error) {
	return nil, "", nil
}

func (h *heldIntake) Cancel(context.Context, string, string) (wire.Order, error) {
	return wire.Order{}, nil
}

// Decode reads bodies as the order kind does.
func (h *heldIntake) Decode(body []byte) (intake.Request, error) { return scripted{}.Decode(body) }

const shedBody = `{"customer_id":"cus_1","currency":"USD","items":[{"sku":"sku-1","quantity":2,"unit_amount":1299}],"payment_method":"pm_card_visa"}`

// answer is what a shed test reads of a response, its body closed.
type answer struct {
	StatusCode int
	Header     http.Header
}

func shedPost(t *testing.T, url, key string, wait bool) *answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/orders", strings.NewReader(shedBody))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if wait {
		req.Header.Set("Prefer", "wait=10")
	}
	// A shed POST is answered at once; one the API took on waits for release.
	c := &http.Client{Timeout: 3 * time.Second}
	if strings.HasPrefix(key, "held-") {
		c.Timeout = 0
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return nil
	}
	resp.Body.Close()
	return &answer{StatusCode: resp.StatusCode, Header: resp.Header}
}

// Above its bounds the API answers a POST 503 with Retry-After at once and
// never places it; the POSTs it admitted finish; a GET is never shed.
func TestPostsAboveTheBoundAreShedBeforeAnyWork(t *testing.T) {
	held := &heldIntake{release: make(chan struct{})}
	srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Keys: acceptAll{}, Intake: held, MaxBodyBytes: 1 << 10, Shed: ShedLimits{Posts: 2, Waiters: 1}}))
	defer srv.Close()
	release := sync.OnceFunc(func() { close(held.release) })
	defer release() // before the server closes, which waits for what it holds
	var wg sync.WaitGroup
	admitted := make([]int, 3)
	for i, wait := range []bool{false, false, true} {
		wg.Go(func() {
			if resp := shedPost(t, srv.URL, "held-"+strconv.Itoa(i), wait); resp != nil {
				admitted[i] = resp.StatusCode
			}
		})
	}
	for held.placed.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	for _, wait := range []bool{false, true} {
		began := time.Now()
		resp := shedPost(t, srv.URL, "over", wait)
		if resp == nil {
			t.Fatalf("a POST over the bound (wait %v) was not answered at once", wait)
		}
		retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusServiceUnavailable || retry < minShedRetry || retry > maxShedRetry ||
			resp.Header.Get("Content-Type") != "application/problem+json" || time.Since(began) > 2*time.Second {
			t.Fatalf("a POST over the bound (wait %v): %d, Retry-After %q, %s, in %s", wait, resp.StatusCode,
				resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), time.Since(began))
		}
	}
	get, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/orders/ord_1", nil)
	if err != nil {
		t.Fatal(err)
	}
	get.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := held.placed.Load(); n != 3 || resp.StatusCode != http.StatusOK {
		t.Fatalf("placed %d (want the 3 admitted), GET while full: %d", n, resp.StatusCode)
	}
	release()
	wg.Wait()
	for i, status := range admitted {
		if status != http.StatusAccepted {
			t.Fatalf("admitted POST %d: %d, want 202", i, status)
		}
	}
	if resp := shedPost(t, srv.URL, "after", false); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a POST once the bound has room: %d", resp.StatusCode)
	}
}

// Retry-After is the time the gate takes to drain at the rate its requests
// finished at, within its bounds.
func TestRetryAfterFollowsTheDrainRate(t *testing.T) {
	g := &gate{max: 100}
	t0 := time.Now()
	if s := g.retryAfter(t0); s != minShedRetry {
		t.Fatalf("unmeasured: %d s, want %d", s, minShedRetry)
	}
	g.inFlight.Store(40)
	g.done.Add(20) // 20 finished in 2 s: 10 a second
	if s := g.retryAfter(t0.Add(2 * time.Second)); s != 4 {
		t.Fatalf("40 in flight at 10 a second: Retry-After %d, want 4", s)
	}
	g.inFlight.Store(100)
	// Nothing finished since: the rate halves at each sample (5, then 2.5).
	if s := g.retryAfter(t0.Add(time.Minute)); s != 20 {
		t.Fatalf("100 in flight at 5 a second: Retry-After %d, want 20", s)
	}
	if s := g.retryAfter(t0.Add(2 * time.Minute)); s != maxShedRetry {
		t.Fatalf("100 in flight at 2.5 a second: Retry-After %d, want %d", s, maxShedRetry)
	}
}

// fleetBehind is a fleet backlog with room for free POSTs, then none; it
// counts the POSTs of another tenant than acme's (the caller's) it was asked for.
type fleetBehind struct{ free, strangers atomic.Int32 }

func (f *fleetBehind) Admit(tenant string) (int, bool) {
	if tenant != "acme" {
		f.strangers.Add(1)
	}
	if f.free.Add(-1) >= 0 {
		return 0, true
	}
	return 7, false
}

// Over the fleet's backlog a POST is answered 503 with the backlog's
// Retry-After and never placed, whatever this process holds; a GET passes.
func TestPostsOverTheFleetsBacklogAreShedBeforeAnyWork(t *testing.T) {
	held := &heldIntake{release: make(chan struct{})}
	close(held.release)
	fleet := &fleetBehind{}
	fleet.free.Store(1)
	srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Keys: acceptAll{}, Intake: held, MaxBodyBytes: 1 << 10, Shed: ShedLimits{Posts: 2, Waiters: 1, Backlog: fleet}}))
	defer srv.Close()
	if resp := shedPost(t, srv.URL, "first", true); resp == nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the POST the backlog had room for: %+v", resp)
	}
	for _, wait := range []bool{false, true, false} {
		resp := shedPost(t, srv.URL, "over", wait)
		if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "7" {
			t.Fatalf("a POST over the fleet's backlog (wait %v): %+v", wait, resp)
		}
	}
	// A GET passes; a POST to a route that takes none hears 405, not 503.
	for method, want := range map[string]int{http.MethodGet: http.StatusOK, http.MethodPost: http.StatusMethodNotAllowed} {
		req, err := http.NewRequest(method, srv.URL+"/v1/orders/ord_1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s /v1/orders/ord_1 over the backlog: %d, want %d", method, resp.StatusCode, want)
		}
	}
	if n := fleet.strangers.Load(); n != 0 {
		t.Fatalf("the backlog was asked for %d POSTs as another tenant's than the caller's", n)
	}
	if n := held.placed.Load(); n != 1 {
		t.Fatalf("placed %d, want the 1 admitted", n)
	}
	// The refused POSTs gave their places back: the process's own bound of 2
	// would refuse a third otherwise, before the backlog is asked.
	fleet.free.Store(2)
	for i := range 2 {
		if resp := shedPost(t, srv.URL, "later-"+strconv.Itoa(i), false); resp == nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST %d once the backlog has room: %+v", i, resp)
		}
	}
}

// heldKeys holds keys (stored keys) of acme's; while down every read fails.
// It counts the reads.
type heldKeys struct {
	keys  map[string]bool
	down  atomic.Bool
	asked atomic.Int32
}

func (h *heldKeys) Holds(_ context.Context, tenant, key string) (bool, error) {
	h.asked.Add(1)
	if h.down.Load() {
		return false, errors.New("database down")
	}
	return tenant == "acme" && h.keys[key], nil
}

// Over the fleet's backlog a retry of a key already held passes and is
// answered (its record's answer, no new work); a new key, a key held only for
// another kind (a refund's) and a key that cannot be read are refused with
// 503 as before; under the backlog no key is read.
func TestARetryOfAHeldKeyPassesTheBacklog(t *testing.T) {
	held := &heldIntake{release: make(chan struct{})}
	close(held.release)
	fleet := &fleetBehind{} // no room
	keys := &heldKeys{keys: map[string]bool{"k-held": true, identity.StoredKey(refund.Kind, "k-refund"): true}}
	srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Keys: acceptAll{}, Intake: held, MaxBodyBytes: 1 << 10, Shed: ShedLimits{Posts: 2, Waiters: 1, Backlog: fleet, Held: keys}}))
	defer srv.Close()
	if resp := shedPost(t, srv.URL, "k-held", false); resp == nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a retry of a held key over the backlog: %+v, want it answered", resp)
	}
	for _, key := range []string{"k-new", "k-refund"} {
		if resp := shedPost(t, srv.URL, key, true); resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "7" {
			t.Fatalf("POST with %s over the backlog: %+v, want 503 with the backlog's Retry-After", key, resp)
		}
	}
	keys.down.Store(true)
	if resp := shedPost(t, srv.URL, "k-held", false); resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a held key that cannot be read, over the backlog: %+v, want 503", resp)
	}
	if n := held.placed.Load(); n != 1 {
		t.Fatalf("placed %d, want the 1 retry of a held key", n)
	}
	keys.down.Store(false)
	fleet.free.Store(1)
	asked := keys.asked.Load()
	if resp := shedPost(t, srv.URL, "k-new", false); resp == nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a POST once the backlog has room: %+v", resp)
	}
	if n := keys.asked.Load() - asked; n != 0 {
		t.Fatalf("under the backlog %d keys were read, want none", n)
	}
}
