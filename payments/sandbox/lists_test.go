package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/orderflow/orderflow/payments/provider"
)

// Lists page as Stripe's do: newest first, limit, starting_after, has_more, and a
// created range; the provider client reads one to its end, page by page.
func TestListsPageAsStripeDoes(t *testing.T) {
	sim, c, url := newSandboxAt(t)
	sim.Preload(25, 100, "USD", func(i int) string { return fmt.Sprintf("ord_%d", i) }, func(int) string { return "" })
	page := func(query string) (ids []string, more bool, status int) {
		resp, err := http.Get(url + "/v1/charges?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			Data    []struct{ ID string }
			HasMore bool `json:"has_more"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&v)
		for _, d := range v.Data {
			ids = append(ids, d.ID)
		}
		return ids, v.HasMore, resp.StatusCode
	}
	first, more, _ := page("limit=10")
	if len(first) != 10 || !more {
		t.Fatalf("first page: %d, has_more %v", len(first), more)
	}
	second, _, _ := page("limit=10&starting_after=" + first[9])
	if len(second) != 10 || second[0] == first[9] {
		t.Fatalf("second page: %v after %s", second, first[9])
	}
	last, more, _ := page("limit=10&starting_after=" + second[9])
	if len(last) != 5 || more {
		t.Fatalf("last page: %d, has_more %v", len(last), more)
	}
	if ids, _, _ := page(fmt.Sprintf("created[gte]=%d", time.Now().Add(time.Hour).Unix())); len(ids) != 0 {
		t.Fatalf("created in the future: %v", ids)
	}
	if _, _, status := page("limit=101"); status != http.StatusBadRequest {
		t.Fatalf("limit=101: %d", status)
	}
	var all, pages int
	err := c.ListCharges(context.Background(), time.Now().Add(-time.Minute), func(cs []provider.Charge) error {
		all, pages = all+len(cs), pages+1
		return nil
	})
	if err != nil || all != 25 || pages != 1 {
		t.Fatalf("the client read %d charges in %d pages: %v", all, pages, err)
	}
}
