package activities_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/provider"
	"github.com/orderflow/orderflow/internal/sandbox"
	"github.com/orderflow/orderflow/internal/stacktest"
)

// A second confirm of an intent that already succeeded charges nothing: the ledger
// records the intent's charge once, whichever keys asked, so it nets what the
// provider holds.
func TestIntentChargeIsRecordedOnce(t *testing.T) {
	pool := stacktest.Pool(t)
	sim := sandbox.New(slog.New(slog.NewTextHandler(io.Discard, nil)), sandbox.Options{})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	pay := activities.NewPayments(pool, provider.New(srv.URL, "", 5*time.Second, nil), activities.NewPaymentMetrics(prometheus.NewRegistry()))
	ctx := context.Background()

	wf := order.WorkflowID(stacktest.Name("tenant"), order.FromHTTP, "k")
	o := order.Order{ID: order.IDFor(wf), Tenant: "t", WorkflowID: wf, CustomerID: "c", Currency: "USD",
		Items: []order.Item{{SKU: "s", Quantity: 1, UnitAmount: 700}}, Amount: 700, PaymentMethod: "pm_card_visa"}
	if err := orderstore.New(pool).Insert(ctx, o); err != nil {
		t.Fatal(err)
	}
	step := func(op string, gen int) activities.Step {
		return activities.Step{WorkflowID: wf, OrderID: o.ID, Amount: o.Amount, Currency: o.Currency, Key: order.PaymentKey(wf, op, gen)}
	}
	in, err := pay.CreateIntent(ctx, activities.IntentInput{Step: step("intent", 0), Tenant: "t", PaymentMethod: o.PaymentMethod})
	if err != nil {
		t.Fatal(err)
	}
	for gen := range 2 {
		st, err := pay.ConfirmIntent(ctx, activities.ConfirmInput{Step: step("confirm", gen), IntentID: in.IntentID})
		if err != nil || st.Status != activities.IntentSucceeded {
			t.Fatalf("confirm with key %d: %+v, %v", gen, st, err)
		}
	}
	if _, err := pay.RetrieveIntent(ctx, activities.RetrieveInput{OrderID: o.ID, IntentID: in.IntentID, Key: order.PaymentKey(wf, "confirm", 1)}); err != nil {
		t.Fatal(err)
	}
	var net int64
	var succeeded int
	if err := pool.QueryRow(ctx, `SELECT COALESCE(sum(amount), 0), count(*) FROM payments WHERE order_id = $1 AND kind = 'charge' AND status = 'succeeded'`, o.ID).
		Scan(&net, &succeeded); err != nil {
		t.Fatal(err)
	}
	if charges := len(sim.ChargesForOrder(o.ID)); charges != 1 || succeeded != 1 || net != o.Amount {
		t.Fatalf("provider charges %d; ledger: %d succeeded charge rows netting %d, want 1 netting %d", charges, succeeded, net, o.Amount)
	}
}
