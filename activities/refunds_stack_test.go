//go:build stack

package activities_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/payments/sandbox"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// paidOrder is an order of amount on the stack's Postgres, paid through an
// intent at an in-process sandbox, as its workflow leaves it: the intent and its
// charge in the ledger, the order PAID.
type paidOrder struct {
	pool   *pgxpool.Pool
	pay    *activities.Payments
	m      activities.PaymentMetrics
	prov   *provider.Client
	sim    *sandbox.Server
	simURL string
	o      order.Order
	intent string
}

func newPaidOrder(t *testing.T, amount int64) *paidOrder {
	t.Helper()
	ctx := context.Background()
	pool := stacktest.Pool(t)
	sim := sandbox.New(slog.New(slog.NewTextHandler(io.Discard, nil)), sandbox.Options{})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	p := &paidOrder{pool: pool, sim: sim, simURL: srv.URL, prov: provider.New(provider.Config{URL: srv.URL, Timeout: 5 * time.Second}, nil)}
	p.m = activities.NewPaymentMetrics(prometheus.NewRegistry())
	p.pay = activities.NewPayments(pool, p.prov, p.m)
	tenant := stacktest.Name("tenant")
	wf := order.WorkflowID(tenant, order.FromHTTP, "k")
	p.o = order.Order{ID: order.IDFor(wf), Tenant: tenant, WorkflowID: wf, CustomerID: "c", Currency: "USD",
		Items: []order.Item{{SKU: "s", Quantity: 1, UnitAmount: amount}}, Amount: amount, PaymentMethod: "pm_card_visa"}
	if err := orderstore.New(pool).Insert(ctx, p.o); err != nil {
		t.Fatal(err)
	}
	step := func(op string) activities.Step {
		return activities.Step{WorkflowID: wf, OrderID: p.o.ID, Amount: amount, Currency: "USD", Key: order.PaymentKey(wf, op, 0)}
	}
	in, err := p.pay.CreateIntent(ctx, activities.IntentInput{Step: step("intent"), Tenant: tenant, PaymentMethod: p.o.PaymentMethod})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := p.pay.ConfirmIntent(ctx, activities.ConfirmInput{Step: step("confirm"), IntentID: in.IntentID}); err != nil || st.Status != activities.IntentSucceeded {
		t.Fatalf("confirm: %+v, %v", st, err)
	}
	if err := orderstore.New(pool).Move(ctx, p.o.ID, order.StatusPaid, in.IntentID, ""); err != nil {
		t.Fatal(err)
	}
	p.intent = in.IntentID
	return p
}

// request records a refund request of amount (0: what is left), as the ingress
// does, and returns it.
func (p *paidOrder) request(t *testing.T, amount int64) refund.Refund {
	t.Helper()
	wf := refund.WorkflowID(p.o.Tenant, identity.FromHTTP, stacktest.Name("r"))
	r := refund.Refund{ID: refund.IDFor(wf), Tenant: p.o.Tenant, WorkflowID: wf, OrderID: p.o.ID, Amount: amount}
	if err := p.pay.RecordRefund(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (p *paidOrder) send(t *testing.T, r refund.Refund, gen int) (activities.Reservation, error) {
	t.Helper()
	return p.pay.SendRefund(context.Background(), activities.SendInput{Refund: r, IntentID: p.intent, Currency: "USD", Gen: gen})
}

// refunded is what the sandbox refunded of the order's intent, in all.
func (p *paidOrder) refunded() int64 {
	var n int64
	for _, re := range p.sim.Refunds() {
		if re.PaymentIntent == p.intent {
			n += re.Amount
		}
	}
	return n
}

// Twenty refunds of 100 at once on an order of 1299: twelve are reserved, the
// others fail with what is left, and none of the twelve is refused by the
// provider. A refund of "what is left" then takes the 99 left, and one more
// finds nothing. The order, following, is REFUNDED; the ledger records the
// requests' refunds under their own keys only.
func TestConcurrentRefundsNeverReserveMoreThanTheCharge(t *testing.T) {
	p := newPaidOrder(t, 1299)
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make([]activities.Reservation, 20)
	requests := make([]refund.Refund, 20)
	for i := range requests {
		requests[i] = p.request(t, 100)
	}
	for i := range requests {
		wg.Go(func() {
			res, err := p.pay.ReserveRefund(ctx, requests[i])
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	var held int64
	var reserved []refund.Refund
	for i, res := range results {
		switch {
		case res.Status == refund.StatusPending && res.Amount == 100:
			held += res.Amount
			reserved = append(reserved, requests[i])
		case res.Status != refund.StatusFailed || res.Failure != activities.FailureExceeds+": 99 left":
			t.Errorf("refund %d: %+v", i, res)
		}
	}
	if len(reserved) != 12 || held > p.o.Amount {
		t.Fatalf("%d reserved, %d held; want 12 holding at most %d", len(reserved), held, p.o.Amount)
	}
	rest := p.request(t, 0)
	if res, err := p.pay.ReserveRefund(ctx, rest); err != nil || res.Status != refund.StatusPending || res.Amount != 99 {
		t.Fatalf("what is left: %+v, %v; want 99 reserved", res, err)
	}
	if res, err := p.pay.ReserveRefund(ctx, p.request(t, 0)); err != nil || res.Status != refund.StatusFailed ||
		res.Failure != activities.FailureExceeds+": 0 left" {
		t.Fatalf("nothing left: %+v, %v", res, err)
	}
	reserved = append(reserved, rest)
	for _, r := range reserved {
		wg.Go(func() {
			if res, err := p.send(t, r, 0); err != nil || res.Status != refund.StatusSucceeded {
				t.Errorf("send %s: %+v, %v", r.ID, res, err)
			}
		})
	}
	wg.Wait()
	if got := p.refunded(); got != p.o.Amount {
		t.Fatalf("refunded %d at the provider, want %d", got, p.o.Amount)
	}
	f, err := p.pay.FollowPayment(ctx, activities.FollowInput{OrderID: p.o.ID, IntentID: p.intent, Amount: p.o.Amount, Currency: "USD"})
	if err != nil || f.Status != order.StatusRefunded || f.Refunded != p.o.Amount {
		t.Fatalf("follow: %+v, %v", f, err)
	}
	var net int64
	var others int
	if err := p.pool.QueryRow(ctx, `
		SELECT COALESCE(sum(CASE kind WHEN 'charge' THEN amount WHEN 'refund' THEN -amount END) FILTER (WHERE status = 'succeeded'), 0),
		       count(*) FILTER (WHERE idempotency_key LIKE 'provider:%')
		FROM payments WHERE order_id = $1`, p.o.ID).Scan(&net, &others); err != nil {
		t.Fatal(err)
	}
	if net != 0 || others != 0 {
		t.Fatalf("ledger nets %d with %d rows of others' refunds; want 0 and none", net, others)
	}
}

// The order's cancel and its refund requests share one budget, and a
// reservation is not money: while a request is reserved and not at the provider,
// the cancel waits (ErrRefundsInFlight) and sends nothing; once the request's
// refund landed, the cancel refunds what neither it nor a dashboard's refund
// took, and a request after the cancel finds the order being refunded in full.
func TestCancelRefundsWhatRequestsLeave(t *testing.T) {
	p := newPaidOrder(t, 1299)
	ctx := context.Background()
	r := p.request(t, 500)
	if res, err := p.pay.ReserveRefund(ctx, r); err != nil || res.Status != refund.StatusPending {
		t.Fatalf("reserve: %+v, %v", res, err)
	}
	if _, err := p.prov.RefundIntent(ctx, "dashboard-"+p.o.ID, p.intent, 100, nil); err != nil {
		t.Fatal(err)
	}
	cancel := activities.RefundIntentInput{IntentID: p.intent, Step: activities.Step{WorkflowID: p.o.WorkflowID, OrderID: p.o.ID,
		Amount: p.o.Amount, Currency: "USD", Key: order.PaymentKey(p.o.WorkflowID, "refund", 0)}}
	var app *temporal.ApplicationError
	if _, err := p.pay.RefundIntent(ctx, cancel); !errors.As(err, &app) || app.Type() != activities.ErrRefundsInFlight || app.NonRetryable() {
		t.Fatalf("the cancel beside a reservation not sent: %v, want a retryable %s", err, activities.ErrRefundsInFlight)
	}
	if got := p.refunded(); got != 100 {
		t.Fatalf("refunded %d before the request's refund landed, want the dashboard's 100 only", got)
	}
	if res, err := p.send(t, r, 0); err != nil || res.Status != refund.StatusSucceeded {
		t.Fatalf("the reserved request: %+v, %v", res, err)
	}
	if res, err := p.pay.RefundIntent(ctx, cancel); err != nil || res.RefundID == "" {
		t.Fatalf("cancel's refund: %+v, %v", res, err)
	}
	late, err := p.pay.ReserveRefund(ctx, p.request(t, 1))
	if err != nil || late.Status != refund.StatusFailed || !strings.HasPrefix(late.Failure, activities.FailureNotRefundable) {
		t.Fatalf("a request after the cancel: %+v, %v", late, err)
	}
	if got := p.refunded(); got != p.o.Amount {
		t.Fatalf("refunded %d, want %d", got, p.o.Amount)
	}
}

// Unknown outcomes are settled by the intent's refunds: a saved 500 after the
// refund was made is a success; a saved 500 before it ran made nothing: sent
// again with its key, it replays, and the next generation's key refunds. A refund the provider refuses (its charge is
// disputed) ends FAILED with the provider's code and holds nothing.
func TestRefundOutcomesAreReadFromTheIntent(t *testing.T) {
	p := newPaidOrder(t, 1299)
	ctx := context.Background()
	reserve := func(amount int64) refund.Refund {
		r := p.request(t, amount)
		if res, err := p.pay.ReserveRefund(ctx, r); err != nil || res.Status != refund.StatusPending {
			t.Fatalf("reserve: %+v, %v", res, err)
		}
		return r
	}
	p.sim.SetFaults(sandbox.Faults{Only: "refund", FailAfter: 1})
	if res, err := p.send(t, reserve(100), 0); err != nil || res.Status != refund.StatusSucceeded || res.ProviderRefundID == "" {
		t.Fatalf("saved 500 after the refund: %+v, %v", res, err)
	}
	p.sim.SetFaults(sandbox.Faults{Only: "refund", FailBefore: 1})
	r := reserve(200)
	if _, err := p.send(t, r, 0); err == nil || temporal.IsApplicationError(err) {
		t.Fatalf("a 500, not yet known to be saved: %v, want an error retried with the same key", err)
	}
	_, err := p.send(t, r, 0) // the same key: the saved 500 replays
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrPaymentUnknown {
		t.Fatalf("saved 500 before the refund: %v, want %s", err, activities.ErrPaymentUnknown)
	}
	var status string
	if err := p.pool.QueryRow(ctx, `SELECT status FROM payments WHERE idempotency_key = $1`, activities.SendKey(r.WorkflowID, 0)).Scan(&status); err != nil || status != "absent" {
		t.Fatalf("the lost key's ledger row: %q, %v; want absent", status, err)
	}
	if res, err := p.send(t, r, 1); err != nil || res.Status != refund.StatusSucceeded {
		t.Fatalf("the next generation: %+v, %v", res, err)
	}
	if res, err := p.send(t, r, 1); err != nil || res.Status != refund.StatusSucceeded { // a retry, a reset: nothing new
		t.Fatalf("sent again: %+v, %v", res, err)
	}
	if got := p.refunded(); got != 300 {
		t.Fatalf("refunded %d, want 300", got)
	}
	r = reserve(300)
	ch := p.sim.ChargesForOrder(p.o.ID)[0].ID
	resp, err := http.PostForm(p.simURL+"/sandbox/disputes", url.Values{"charge": {ch}})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("open a dispute: %v %v", resp, err)
	}
	resp.Body.Close()
	res, err := p.send(t, r, 0)
	if err != nil || res.Status != refund.StatusFailed || !strings.HasPrefix(res.Failure, "charge_disputed: ") {
		t.Fatalf("refused: %+v, %v", res, err)
	}
	row, err := refundstore.New(p.pool).Get(ctx, r.Tenant, r.ID)
	if err != nil || row.Status != refund.StatusFailed || row.Holds() || row.Key != activities.SendKey(r.WorkflowID, 0) {
		t.Fatalf("refused row: %+v, %v", row, err)
	}
}

// A refund request is counted once as it ends, by outcome: one sent and retried
// is one success; one for more than is left is one failure.
func TestRefundsAreCountedOnceAsTheyEnd(t *testing.T) {
	p := newPaidOrder(t, 500)
	ctx := context.Background()
	ok := p.request(t, 300)
	if res, err := p.pay.ReserveRefund(ctx, ok); err != nil || res.Status != refund.StatusPending {
		t.Fatalf("reserve: %+v, %v", res, err)
	}
	for range 2 { // the activity retried
		if res, err := p.send(t, ok, 0); err != nil || res.Status != refund.StatusSucceeded {
			t.Fatalf("send: %+v, %v", res, err)
		}
	}
	tooMuch := p.request(t, 300)
	if res, err := p.pay.ReserveRefund(ctx, tooMuch); err != nil || res.Status != refund.StatusFailed {
		t.Fatalf("reserve more than is left: %+v, %v", res, err)
	}
	if res, err := p.pay.ReserveRefund(ctx, tooMuch); err != nil || res.Status != refund.StatusFailed {
		t.Fatalf("reserve again: %+v, %v", res, err)
	}
	succeeded := testutil.ToFloat64(p.m.Refunds.WithLabelValues("succeeded"))
	failed := testutil.ToFloat64(p.m.Refunds.WithLabelValues("failed"))
	if succeeded != 1 || failed != 1 {
		t.Fatalf("refunds counted: %v succeeded, %v failed; want 1 and 1", succeeded, failed)
	}
}

// lose deletes the refund's row, as a restore to a snapshot taken before it does.
func (p *paidOrder) lose(t *testing.T, r refund.Refund) {
	t.Helper()
	if _, err := p.pool.Exec(context.Background(), `DELETE FROM refunds WHERE id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
}

// A refund whose row PostgreSQL lost mid-run finishes from the run's own input,
// never retried for ever: lost after its reservation, the send records it
// again, weighs it again and refunds once; lost after its refund was made, a
// retried send finds the provider's refund and makes none.
func TestARefundWhoseRowIsLostFinishesFromItsRun(t *testing.T) {
	p := newPaidOrder(t, 1299)
	ctx := context.Background()
	r := p.request(t, 300)
	if res, err := p.pay.ReserveRefund(ctx, r); err != nil || res.Status != refund.StatusPending {
		t.Fatalf("reserve: %+v, %v", res, err)
	}
	p.lose(t, r)
	if res, err := p.send(t, r, 0); err != nil || res.Status != refund.StatusSucceeded || res.Amount != 300 {
		t.Fatalf("the send of a refund whose row was lost: %+v, %v", res, err)
	}
	// The order followed its refunds meanwhile: refunded in full, it takes no new
	// refund, and the lost row is still found at the provider.
	if _, err := p.pool.Exec(ctx, `UPDATE orders SET status = 'REFUNDED', amount_refunded = 1299 WHERE id = $1`, p.o.ID); err != nil {
		t.Fatal(err)
	}
	p.lose(t, r)
	if res, err := p.send(t, r, 0); err != nil || res.Status != refund.StatusSucceeded || res.Amount != 300 {
		t.Fatalf("a retried send after its refund was made and the row lost: %+v, %v", res, err)
	}
	if got := p.refunded(); got != 300 {
		t.Fatalf("refunded %d, want 300 once", got)
	}
	row, err := refundstore.New(p.pool).Get(ctx, r.Tenant, r.ID)
	if err != nil || row.Status != refund.StatusSucceeded || row.ProviderRefundID == "" {
		t.Fatalf("the refund's row: %+v, %v", row, err)
	}
}

// A refund sent by a release whose refunds did not name their workflow, its
// answer lost: the send after the deploy is refused as another request with the
// key (idempotency_error), and the intent's refunds, read then, name the refund
// made: settled once, never sent again.
func TestARefundSentBeforeItsMetadataChangedIsFoundByItsKey(t *testing.T) {
	p := newPaidOrder(t, 1299)
	ctx := context.Background()
	r := p.request(t, 300)
	if res, err := p.pay.ReserveRefund(ctx, r); err != nil || res.Status != refund.StatusPending {
		t.Fatalf("reserve: %+v, %v", res, err)
	}
	before, err := p.prov.RefundIntent(ctx, activities.SendKey(r.WorkflowID, 0), p.intent, 300,
		map[string]string{"order_id": r.OrderID, "orderflow_refund_request": r.ID})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.send(t, r, 0)
	if err != nil || res.Status != refund.StatusSucceeded || res.ProviderRefundID != before.ID {
		t.Fatalf("the send after the deploy: %+v, %v; want refund %s", res, err, before.ID)
	}
	if got := p.refunded(); got != 300 {
		t.Fatalf("refunded %d, want 300 once", got)
	}
}
