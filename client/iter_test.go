package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// pager answers GET path with pages: the page for the request's cursor ("" for
// the first), or the answer a func writes; it records every request's URI.
type pager struct {
	mu   sync.Mutex
	seen []string
}

func (pg *pager) start(t *testing.T, path string, pages map[string]func(w http.ResponseWriter)) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pg.mu.Lock()
		pg.seen = append(pg.seen, r.URL.RequestURI())
		pg.mu.Unlock()
		page, ok := pages[r.URL.Query().Get("cursor")]
		if r.Method != http.MethodGet || r.URL.EscapedPath() != path || !ok {
			problemAnswer(404, KindNotFound)(w)
			return
		}
		page(w)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL, APIKey: "k", MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (pg *pager) requests() []string {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return append([]string(nil), pg.seen...)
}

// orderPage answers a page of orders with these ids, and next as its cursor
// (none: the last page).
func orderPage(next string, ids ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		var data []string
		for _, id := range ids {
			data = append(data, fmt.Sprintf(`{"id":%q,"status":"PAID","customer_id":"cus_1","currency":"EUR","amount":100,"items":[],`+
				`"created_at":"2026-01-02T10:00:00Z","updated_at":"2026-01-02T10:00:00Z"}`, id))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[%s],"has_more":%t`, strings.Join(data, ","), next != "")
		if next != "" {
			fmt.Fprintf(w, `,"next_cursor":%q`, next)
		}
		_, _ = io.WriteString(w, "}")
	}
}

func refundPage(next string, ids ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		var data []string
		for _, id := range ids {
			data = append(data, fmt.Sprintf(`{"id":%q,"order_id":"ord_1","status":"SUCCEEDED","amount":100,"amount_requested":100,`+
				`"currency":"EUR","created_at":"2026-01-02T10:00:00Z","updated_at":"2026-01-02T10:00:00Z"}`, id))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[%s],"has_more":%t,"next_cursor":%q}`, strings.Join(data, ","), next != "", next)
	}
}

// AllOrders walks every page, each asked for with the previous page's cursor and
// the same filters and limit, and yields the orders in the pages' order; an
// empty page in the middle is passed over, not taken for the end.
func TestAllOrdersFollowsTheCursorAcrossPages(t *testing.T) {
	var pg pager
	c := pg.start(t, "/v1/orders", map[string]func(http.ResponseWriter){
		"":   orderPage("c2", "ord_1", "ord_2"),
		"c2": orderPage("c3", "ord_3", "ord_4"),
		"c3": orderPage("c4"),
		"c4": orderPage("", "ord_5"),
	})
	var ids []string
	for o, err := range c.AllOrders(context.Background(), ListParams{CustomerID: "cus_1", Status: Paid, Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.ID)
	}
	if got := strings.Join(ids, ","); got != "ord_1,ord_2,ord_3,ord_4,ord_5" {
		t.Fatalf("yielded %s", got)
	}
	want := []string{
		"/v1/orders?customer_id=cus_1&limit=2&status=PAID",
		"/v1/orders?cursor=c2&customer_id=cus_1&limit=2&status=PAID",
		"/v1/orders?cursor=c3&customer_id=cus_1&limit=2&status=PAID",
		"/v1/orders?cursor=c4&customer_id=cus_1&limit=2&status=PAID",
	}
	if got := pg.requests(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("requests\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A walk may start from a cursor the caller kept.
func TestAllOrdersStartsAtTheGivenCursor(t *testing.T) {
	var pg pager
	c := pg.start(t, "/v1/orders", map[string]func(http.ResponseWriter){
		"c2": orderPage("", "ord_3"),
	})
	var ids []string
	for o, err := range c.AllOrders(context.Background(), ListParams{Cursor: "c2"}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.ID)
	}
	if strings.Join(ids, ",") != "ord_3" || strings.Join(pg.requests(), " ") != "/v1/orders?cursor=c2" {
		t.Fatalf("yielded %v after %v", ids, pg.requests())
	}
}

// A page the API refuses for good ends the walk: the orders before it, then its
// error once, and no request after it.
func TestAllOrdersStopsAtAnErrorMidway(t *testing.T) {
	var pg pager
	c := pg.start(t, "/v1/orders", map[string]func(http.ResponseWriter){
		"":   orderPage("c2", "ord_1", "ord_2"),
		"c2": problemAnswer(400, KindInvalidBody),
		"c3": orderPage("", "ord_5"), // never asked for
	})
	var ids []string
	var errs []error
	for o, err := range c.AllOrders(context.Background(), ListParams{}) {
		if err != nil {
			if o.ID != "" {
				t.Errorf("the error came with order %q", o.ID)
			}
			errs = append(errs, err)
			if len(errs) > 1 {
				break // a second error: the walk did not end at the first
			}
			continue // a consumer that goes on after the error gets nothing more
		}
		ids = append(ids, o.ID)
	}
	var p *Problem
	if len(errs) != 1 || !errors.As(errs[0], &p) || p.Status != 400 || p.RequestID != "req_1" {
		t.Fatalf("errors %v", errs)
	}
	if strings.Join(ids, ",") != "ord_1,ord_2" || len(pg.requests()) != 2 {
		t.Fatalf("yielded %v after requests %v", ids, pg.requests())
	}
}

// A page that meets a 503 is retried like any list call: the walk goes on
// without an error.
func TestAllOrdersRetriesAPageLikeListOrders(t *testing.T) {
	var pg pager
	var once sync.Once
	c := pg.start(t, "/v1/orders", map[string]func(http.ResponseWriter){
		"": orderPage("c2", "ord_1"),
		"c2": func(w http.ResponseWriter) {
			failed := false
			once.Do(func() { failed = true; problemAnswer(503, KindUnavailable)(w) })
			if !failed {
				orderPage("", "ord_2")(w)
			}
		},
	})
	var ids []string
	for o, err := range c.AllOrders(context.Background(), ListParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.ID)
	}
	if strings.Join(ids, ",") != "ord_1,ord_2" || len(pg.requests()) != 3 {
		t.Fatalf("yielded %v after requests %v", ids, pg.requests())
	}
}

// Breaking out of the loop asks for no further page: neither within a page nor
// at its last order, when the page said there is more.
func TestAllOrdersBreakMakesNoFurtherRequest(t *testing.T) {
	for _, stopAt := range []string{"ord_1", "ord_2"} {
		var pg pager
		c := pg.start(t, "/v1/orders", map[string]func(http.ResponseWriter){
			"":   orderPage("c2", "ord_1", "ord_2"),
			"c2": orderPage("", "ord_3"),
		})
		var ids []string
		for o, err := range c.AllOrders(context.Background(), ListParams{}) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, o.ID)
			if o.ID == stopAt {
				break
			}
		}
		if ids[len(ids)-1] != stopAt || len(pg.requests()) != 1 {
			t.Errorf("break at %s: yielded %v after requests %v", stopAt, ids, pg.requests())
		}
	}
}

// A context ended mid-walk ends it with the context's error.
func TestAllOrdersStopsWhenTheContextEnds(t *testing.T) {
	var pg pager
	c := pg.start(t, "/v1/orders", map[string]func(http.ResponseWriter){
		"":   orderPage("c2", "ord_1"),
		"c2": orderPage("", "ord_2"),
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ids []string
	var errs []error
	for o, err := range c.AllOrders(ctx, ListParams{}) {
		if err != nil {
			if errs = append(errs, err); len(errs) > 1 {
				break
			}
			continue
		}
		ids = append(ids, o.ID)
		cancel()
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) || strings.Join(ids, ",") != "ord_1" {
		t.Fatalf("yielded %v, errors %v", ids, errs)
	}
}

// A page that says there is more but gives no new cursor is an error, not a walk
// over the same page for ever.
func TestAllOrdersRefusesACursorThatDoesNotMove(t *testing.T) {
	for name, pages := range map[string]map[string]func(http.ResponseWriter){
		"no cursor": {"": func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, `{"data":[{"id":"ord_1"}],"has_more":true}`)
		}},
		"the same cursor": {"": orderPage("c2", "ord_1"), "c2": orderPage("c2", "ord_2")},
	} {
		var pg pager
		c := pg.start(t, "/v1/orders", pages)
		var n, errs int
		for _, err := range c.AllOrders(context.Background(), ListParams{}) {
			if err != nil {
				if errs++; errs > 1 {
					break
				}
				continue
			}
			if n++; n > 10 {
				t.Fatalf("%s: a walk that does not end", name)
			}
		}
		if errs != 1 || len(pg.requests()) > 2 {
			t.Errorf("%s: %d errors after %d orders and %v", name, errs, n, pg.requests())
		}
	}
}

// AllRefunds walks an order's refunds the same way: every page, an error once
// and then nothing, no request after a break.
func TestAllRefundsWalksAnOrdersRefunds(t *testing.T) {
	pages := map[string]func(http.ResponseWriter){
		"":   refundPage("c2", "rfd_3", "rfd_2"),
		"c2": refundPage("", "rfd_1"),
	}
	var pg pager
	c := pg.start(t, "/v1/orders/ord_1/refunds", pages)
	var ids []string
	for r, err := range c.AllRefunds(context.Background(), "ord_1", RefundListParams{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "rfd_3,rfd_2,rfd_1" ||
		strings.Join(pg.requests(), " ") != "/v1/orders/ord_1/refunds?limit=2 /v1/orders/ord_1/refunds?cursor=c2&limit=2" {
		t.Fatalf("yielded %v after %v", ids, pg.requests())
	}

	pages["c2"] = problemAnswer(404, KindNotFound)
	pg = pager{}
	c = pg.start(t, "/v1/orders/ord_1/refunds", pages)
	ids, n := nil, 0
	for r, err := range c.AllRefunds(context.Background(), "ord_1", RefundListParams{}) {
		var p *Problem
		if err != nil && (!errors.As(err, &p) || p.Kind() != KindNotFound || r.ID != "") {
			t.Fatalf("error %v with %+v", err, r)
		}
		if err != nil {
			if n++; n > 1 {
				break
			}
			continue
		}
		ids = append(ids, r.ID)
	}
	if n != 1 || strings.Join(ids, ",") != "rfd_3,rfd_2" || len(pg.requests()) != 2 {
		t.Fatalf("an error mid-way: %d errors, yielded %v after %v", n, ids, pg.requests())
	}

	pg = pager{}
	c = pg.start(t, "/v1/orders/ord_1/refunds", pages)
	for _, err := range c.AllRefunds(context.Background(), "ord_1", RefundListParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if len(pg.requests()) != 1 {
		t.Fatalf("a break: requests %v", pg.requests())
	}
}
