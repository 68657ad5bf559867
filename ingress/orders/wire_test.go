package orders

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
)

// An order's JSON has the fields the OpenAPI spec names, and never the store's
// own (the workflow ID, the request's fingerprint).
func TestOrderJSONShowsNoInternals(t *testing.T) {
	row := orderstore.Row{ID: "ord_1", Status: order.StatusPaid, CustomerID: "cus_1", Currency: "USD", Amount: 500,
		Items: []order.Item{{SKU: "a", Quantity: 1, UnitAmount: 500}}, PaymentRef: "pi_1", CreatedAt: time.Unix(0, 0),
		UpdatedAt: time.Unix(1, 0), WorkflowID: "order:acme:http:k", Fingerprint: []byte{1, 2, 3}}
	b, err := json.Marshal(Wire(row))
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	want := []string{"amount", "created_at", "currency", "customer_id", "id", "items", "payment_ref", "status", "updated_at"}
	if got := slices.Sorted(maps.Keys(fields)); !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	if strings.Contains(string(b), row.WorkflowID) {
		t.Fatalf("the workflow ID leaks: %s", b)
	}
	if got := WireList([]orderstore.Row{row, row}); len(got) != 2 || got[1].ID != "ord_1" {
		t.Fatalf("WireList = %+v", got)
	}
}
