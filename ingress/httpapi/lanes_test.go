package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/payments/provider"
)

// A tenant's GETs of its orders waiting on 3-D Secure read their next action
// within its own share of the provider budget: while "spent" has used its
// share up and 15 of its reads wait, acme's GET of its order is served with
// its next action.
func TestGetReadsTheNextActionInItsTenantsShare(t *testing.T) {
	stripe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"pi_1","object":"payment_intent","status":"requires_action","client_secret":"pi_1_secret_x",
			"next_action":{"type":"redirect_to_url","redirect_to_url":{"url":"https://bank.example/3ds"}}}`)
	}))
	defer stripe.Close()
	pace := &spentShares{turns: 5, taken: map[string]int{}}
	orders := &nextActions{intents: provider.New(provider.Config{URL: stripe.URL, APIKey: "sk_test_123", Timeout: 10 * time.Second},
		provider.Budgeted(http.DefaultTransport, pace, nil))}
	srv := httptest.NewServer(NewServer(Deps{Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Keys: keysByName{}, Intake: orders, MaxBodyBytes: 1 << 10}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // the spent tenant's reads still waiting give up
	for range 20 {
		wg.Go(func() { _, _ = getOrder(ctx, srv.URL, "k-spent") })
	}
	for orders.asked.Load() < 20 || pace.took() < 5 {
		time.Sleep(time.Millisecond)
	}
	bctx, bcancel := context.WithTimeout(ctx, 5*time.Second)
	defer bcancel()
	o, err := getOrder(bctx, srv.URL, "k-acme")
	if err != nil {
		t.Fatalf("acme's GET while spent's reads wait: %v", err)
	}
	if o.NextAction == nil || o.NextAction.RedirectURL != "https://bank.example/3ds" {
		t.Fatalf("acme's order came back without its next action: %+v", o)
	}
	if n := pace.tookOf("spent"); n != 5 {
		t.Fatalf("spent's reads took %d turns of its row, want its 5", n)
	}
}

// getOrder GETs ord_1 with key, and decodes the order of a 200.
func getOrder(ctx context.Context, base, key string) (wire.Order, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/orders/ord_1", nil)
	if err != nil {
		return wire.Order{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return wire.Order{}, err
	}
	defer resp.Body.Close()
	var o wire.Order
	if resp.StatusCode != http.StatusOK {
		return o, errors.New(resp.Status)
	}
	return o, json.NewDecoder(resp.Body).Decode(&o)
}

// nextActions is an intake whose every order waits on its customer: a GET
// reads its intent's next action, as orders.Service does.
type nextActions struct {
	scripted
	intents *provider.Client
	asked   atomic.Int32
}

func (n *nextActions) Get(ctx context.Context, _, id string) (wire.Order, error) {
	n.asked.Add(1)
	o := wire.Order{ID: id}
	if pi, err := n.intents.RetrieveIntent(ctx, "pi_1"); err == nil {
		o.NextAction = pi.NextAction
	} // else shown without it, as orders.Service does
	return o, nil
}

// spentShares is a pace whose tenants' rows each give turns turns, then none:
// a share used up across the fleet.
type spentShares struct {
	turns int
	mu    sync.Mutex
	taken map[string]int
}

func (s *spentShares) WaitTenant(ctx context.Context, tenant string, _ float64) error {
	s.mu.Lock()
	ok := s.taken[tenant] < s.turns
	if ok {
		s.taken[tenant]++
	}
	s.mu.Unlock()
	if ok {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (*spentShares) WaitAccount(context.Context) error { return nil }

// took is the turns all rows gave.
func (s *spentShares) took() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.taken {
		n += t
	}
	return n
}

func (s *spentShares) tookOf(tenant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taken[tenant]
}
