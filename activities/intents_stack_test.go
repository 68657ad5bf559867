//go:build stack

package activities_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// newPayments is the payment activities on the stack's Postgres and an in-process
// sandbox, with an order recorded for them to pay.
func newPayments(t *testing.T) (*activities.Payments, *provider.Client, *sandbox.Server, order.Order) {
	t.Helper()
	pool := stacktest.Pool(t)
	sim := sandbox.New(slog.New(slog.NewTextHandler(io.Discard, nil)), sandbox.Options{})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	prov := provider.New(provider.Config{URL: srv.URL, Timeout: 5 * time.Second}, nil)
	wf := order.WorkflowID(stacktest.Name("tenant"), order.FromHTTP, "k")
	o := order.Order{ID: order.IDFor(wf), Tenant: "t", WorkflowID: wf, CustomerID: "c", Currency: "USD",
		Items: []order.Item{{SKU: "s", Quantity: 1, UnitAmount: 700}}, Amount: 700, PaymentMethod: "pm_card_visa"}
	if err := orderstore.New(pool).Insert(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return activities.NewPayments(pool, prov, activities.NewPaymentMetrics(prometheus.NewRegistry())), prov, sim, o
}

// A second confirm of an intent that already succeeded charges nothing: the ledger
// records the intent's charge once, whichever keys asked, so it nets what the
// provider holds.
func TestIntentChargeIsRecordedOnce(t *testing.T) {
	pay, _, sim, o := newPayments(t)
	ctx := context.Background()
	wf := o.WorkflowID
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
	if err := stacktest.Pool(t).QueryRow(ctx, `SELECT COALESCE(sum(amount), 0), count(*) FROM payments WHERE order_id = $1 AND kind = 'charge' AND status = 'succeeded'`, o.ID).
		Scan(&net, &succeeded); err != nil {
		t.Fatal(err)
	}
	if charges := len(sim.ChargesForOrder(o.ID)); charges != 1 || succeeded != 1 || net != o.Amount {
		t.Fatalf("provider charges %d; ledger: %d succeeded charge rows netting %d, want 1 netting %d", charges, succeeded, net, o.Amount)
	}
}

// A confirm whose key the provider already took with other parameters (a retry
// after a deploy changed the return URL) is answered idempotency_error: what the
// key did is read from the intent, which says it succeeded, never taken as
// nothing charged.
func TestAConfirmKeyReusedIsSettledByReadingTheIntent(t *testing.T) {
	pay, _, sim, o := newPayments(t)
	ctx := context.Background()
	wf := o.WorkflowID
	step := func(op string) activities.Step {
		return activities.Step{WorkflowID: wf, OrderID: o.ID, Amount: o.Amount, Currency: o.Currency, Key: order.PaymentKey(wf, op, 0)}
	}
	in, err := pay.CreateIntent(ctx, activities.IntentInput{Step: step("intent"), Tenant: "t", PaymentMethod: o.PaymentMethod})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler()) // the same sandbox, another client
	t.Cleanup(srv.Close)
	before := provider.New(provider.Config{URL: srv.URL, Timeout: 5 * time.Second, ReturnURL: "https://shop.example/back"}, nil)
	if _, err := before.ConfirmIntent(ctx, step("confirm").Key, in.IntentID); err != nil {
		t.Fatal(err)
	}
	st, err := pay.ConfirmIntent(ctx, activities.ConfirmInput{Step: step("confirm"), IntentID: in.IntentID})
	if err != nil || st.Status != activities.IntentSucceeded {
		t.Fatalf("confirm with the key reused: %+v, %v; want the intent's success", st, err)
	}
	if charges := len(sim.ChargesForOrder(o.ID)); charges != 1 {
		t.Fatalf("%d charges", charges)
	}
}

// The provider quotes a payment method it does not know; the error the workflow
// gets, and so the order's failure and its event, carry it scrubbed.
func TestProviderErrorTextIsScrubbed(t *testing.T) {
	pay, _, _, o := newPayments(t)
	const token = "pm_1QzSecretToken42"
	in := activities.IntentInput{Step: activities.Step{WorkflowID: o.WorkflowID, OrderID: o.ID, Amount: o.Amount, Currency: o.Currency,
		Key: order.PaymentKey(o.WorkflowID, "intent", 0)}, Tenant: o.Tenant, PaymentMethod: token}
	_, err := pay.CreateIntent(context.Background(), in)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrPaymentRejected {
		t.Fatalf("unknown payment method: %v, want %s", err, activities.ErrPaymentRejected)
	}
	if strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "No such PaymentMethod: 'pm_…#") {
		t.Fatalf("error text %q: want the token scrubbed", err)
	}
}

// An intent created by a release whose intents did not name their workflow, its
// answer lost: the retry after the deploy sends the key with the new metadata,
// which the provider refuses as another request (idempotency_error), and then
// as the release before sent it, which gets the intent made: one intent, never
// a creation refused for good.
func TestAnIntentCreatedBeforeItsMetadataChangedIsFoundByItsKey(t *testing.T) {
	pay, prov, _, o := newPayments(t)
	ctx := context.Background()
	step := activities.Step{WorkflowID: o.WorkflowID, OrderID: o.ID, Amount: o.Amount, Currency: o.Currency, Key: order.PaymentKey(o.WorkflowID, "intent", 0)}
	before, err := prov.CreateIntent(ctx, step.Key, o.Amount, o.Currency, o.PaymentMethod, map[string]string{"order_id": o.ID, "tenant": "t"})
	if err != nil {
		t.Fatal(err)
	}
	in, err := pay.CreateIntent(ctx, activities.IntentInput{Step: step, Tenant: "t", PaymentMethod: o.PaymentMethod})
	if err != nil || in.IntentID != before.ID {
		t.Fatalf("creation retried after the deploy: %+v, %v; want intent %s", in, err, before.ID)
	}
	n := 0
	if err := prov.ListIntents(ctx, time.Now().Add(-time.Hour), func(page []provider.Intent) error { n += len(page); return nil }); err != nil || n != 1 {
		t.Fatalf("%d intents at the provider (%v), want 1", n, err)
	}
}
