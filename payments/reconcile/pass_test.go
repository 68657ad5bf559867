package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
)

// fakeProvider holds charges, refunds and intents as the provider's lists give
// them, and answers refunds as Stripe does: the first answer to a key is saved
// and replayed to every retry with it, a 5xx included (Replayed).
type fakeProvider struct {
	charges  []provider.Charge
	refunds  []listed[provider.Refund]
	intents  []listed[provider.Intent]
	saved    map[string]error
	refused  map[string]*provider.Error // by charge: the answer to any refund of it
	faults   map[string]int             // by charge: the next new keys that save a 500
	sent     []sent                     // every refund request, in order
	listErr  error                      // the answer to ListCharges
	disputes []provider.Dispute
}

type listed[T any] struct {
	obj     T
	created time.Time
}

type sent struct{ key, charge string }

// inPages hands page the objects two at a time, as a provider's list pages them.
func inPages[T any](objs []T, page func([]T) error) error {
	for len(objs) > 0 {
		n := min(2, len(objs))
		if err := page(objs[:n:n]); err != nil {
			return err
		}
		objs = objs[n:]
	}
	return nil
}

func (f *fakeProvider) ListCharges(_ context.Context, since time.Time, page func([]provider.Charge) error) error {
	if f.listErr != nil {
		return f.listErr
	}
	var out []provider.Charge
	for _, c := range f.charges {
		if c.Created.Unix() >= since.Unix() {
			out = append(out, c)
		}
	}
	return inPages(out, page)
}

func (f *fakeProvider) ListRefundsSince(_ context.Context, since time.Time, page func([]provider.Refund) error) error {
	var out []provider.Refund
	for _, re := range f.refunds {
		if re.created.Unix() >= since.Unix() {
			out = append(out, re.obj)
		}
	}
	return inPages(out, page)
}

func (f *fakeProvider) ListDisputes(context.Context, time.Time) ([]provider.Dispute, error) {
	return f.disputes, nil
}

func (f *fakeProvider) ListIntents(_ context.Context, since time.Time, page func([]provider.Intent) error) error {
	var out []provider.Intent
	for _, pi := range f.intents {
		if pi.created.Unix() >= since.Unix() {
			out = append(out, pi.obj)
		}
	}
	return inPages(out, page)
}

func (f *fakeProvider) CancelIntent(context.Context, string, string) (provider.Intent, error) {
	return provider.Intent{}, errors.New("no intent to cancel")
}

func (f *fakeProvider) RefundCharge(_ context.Context, key, chargeID string, amount int64, md map[string]string) (provider.Refund, error) {
	f.sent = append(f.sent, sent{key, chargeID})
	if err, ok := f.saved[key]; ok {
		var perr *provider.Error
		if errors.As(err, &perr) {
			replay := *perr
			replay.Replayed = true
			return provider.Refund{}, &replay
		}
		return provider.Refund{}, errors.New("a saved success: not expected here")
	}
	i := f.charge(chargeID)
	switch {
	case f.refused[chargeID] != nil:
		f.saved[key] = f.refused[chargeID]
		return provider.Refund{}, f.refused[chargeID]
	case f.faults[chargeID] > 0:
		f.faults[chargeID]--
		f.saved[key] = &provider.Error{StatusCode: 500, Type: "api_error", Message: "an error occurred"}
		return provider.Refund{}, f.saved[key]
	case amount > f.charges[i].Amount-f.charges[i].Refunded:
		return provider.Refund{}, &provider.Error{StatusCode: 400, Type: "invalid_request_error", Code: "charge_already_refunded"}
	}
	f.charges[i].Refunded += amount
	re := provider.Refund{ID: fmt.Sprintf("re_%d", len(f.refunds)), Charge: chargeID, Intent: f.charges[i].Intent,
		Amount: amount, Status: "succeeded", Metadata: md}
	f.refunds = append(f.refunds, listed[provider.Refund]{re, time.Now()})
	f.saved[key] = nil
	return re, nil
}

func (f *fakeProvider) charge(id string) int {
	for i, c := range f.charges {
		if c.ID == id {
			return i
		}
	}
	panic("no charge " + id)
}

// refundsOf counts the refunds the provider made of a charge.
func (f *fakeProvider) refundsOf(chargeID string) int {
	n := 0
	for _, re := range f.refunds {
		if re.obj.Charge == chargeID {
			n++
		}
	}
	return n
}

// keysFor are the keys of the refund requests sent for a charge, in order.
func (f *fakeProvider) keysFor(chargeID string) []string {
	var out []string
	for _, s := range f.sent {
		if s.charge == chargeID {
			out = append(out, s.key)
		}
	}
	return out
}

// fakeEngine runs every workflow but those closed, and records the follows it
// starts; followErrs are the answers of the next Follow calls; known are what workflows say of their orders, by order ID (Lost) and by
// workflow ID (Known); started when the workflows of orders started, by order
// ID, on the engine's clock (Lost finds none outside its window; unset: any);
// lostErr the answer to Lost, knownErr to Known; closed the workflows not
// running; recovered the orders whose recovery runs it started.
type fakeEngine struct {
	followed      []string
	followErrs    []error
	known         map[string]Known
	started       map[string]time.Time
	lostErr       error
	knownErr      error
	closed        map[string]bool
	recovered     []string
	recoveredWith string        // the intent the last recovery run was given
	retention     time.Duration // 72h when zero
}

func (e *fakeEngine) Running(_ context.Context, workflowID string) (bool, error) {
	return !e.closed[workflowID], nil
}
func (e *fakeEngine) Recover(_ context.Context, o orderstore.Unsettled, intentID string) error {
	e.recovered = append(e.recovered, o.ID)
	e.recoveredWith = intentID
	return nil
}
func (e *fakeEngine) Retention(context.Context) (time.Duration, error) {
	if e.retention == 0 {
		return 72 * time.Hour, nil
	}
	return e.retention, nil
}
func (e *fakeEngine) Known(_ context.Context, workflowID string) (Known, bool, error) {
	if e.knownErr != nil {
		return Known{}, false, e.knownErr
	}
	k, ok := e.known[workflowID]
	return k, ok, nil
}
func (e *fakeEngine) Lost(_ context.Context, tenant, orderID string, from, to time.Time) (Known, bool, error) {
	if e.lostErr != nil {
		return Known{}, false, e.lostErr
	}
	if at, ok := e.started[orderID]; ok && (at.Before(from) || at.After(to)) {
		return Known{}, false, nil
	}
	k, ok := e.known[orderID]
	return k, ok && k.Order.Tenant == tenant, nil
}
func (e *fakeEngine) Follow(_ context.Context, o order.Order, _, trigger string) error {
	if len(e.followErrs) > 0 {
		err := e.followErrs[0]
		e.followErrs = e.followErrs[1:]
		if err != nil {
			return err
		}
	}
	e.followed = append(e.followed, o.ID+" "+trigger)
	return nil
}

// fakeOrders are orders by ID, and those unsettled; noted the disputes shown
// on ended orders, by order ID.
type fakeOrders struct {
	byID  map[string]orderstore.Standing
	open  []orderstore.Unsettled
	noted map[string]string
}

func (o *fakeOrders) NoteDispute(_ context.Context, id, status string) (bool, error) {
	if o.noted[id] == status {
		return false, nil
	}
	o.noted[id] = status
	return true, nil
}

func (o *fakeOrders) Unsettled(context.Context, time.Time, int) ([]orderstore.Unsettled, error) {
	return o.open, nil
}

func (o *fakeOrders) Standings(_ context.Context, ids []string) (map[string]orderstore.Standing, error) {
	out := map[string]orderstore.Standing{}
	for _, id := range ids {
		if s, ok := o.byID[id]; ok {
			out[id] = s
		}
	}
	return out, nil
}

// fakeLedger names the order of each intent.
type fakeLedger map[string]string

func (l fakeLedger) IntentOfOrder(context.Context, string) (string, error) { return "", nil }
func (l fakeLedger) OrderOfIntent(_ context.Context, intentID string) (string, error) {
	return l[intentID], nil
}

// fakeFindings is Store in memory, with its rules: one finding per (kind,
// provider object, order), an action_failed one replaced by a repair.
type fakeFindings struct {
	rows    map[[3]string]Finding
	cursors map[string]time.Time
	rebuilt map[string]Known // by order ID
}

// Rebuild writes the order and its finding together, as Store does in a
// transaction.
func (s *fakeFindings) Rebuild(ctx context.Context, k Known, f Finding) (bool, error) {
	if _, ok := s.rebuilt[k.Order.ID]; ok {
		return false, nil
	}
	s.rebuilt[k.Order.ID] = k
	_, err := s.Record(ctx, f)
	return true, err
}

func (s *fakeFindings) Record(_ context.Context, f Finding) (bool, error) {
	k := [3]string{f.Kind, f.ProviderID, f.OrderID}
	if old, ok := s.rows[k]; ok && (old.Action != ActionFailed || f.Action == ActionFailed) {
		return false, nil
	}
	s.rows[k] = f
	return true, nil
}

func (s *fakeFindings) Cursor(_ context.Context, name string) (time.Time, bool, error) {
	at, ok := s.cursors[name]
	return at, ok, nil
}

func (s *fakeFindings) SetCursor(_ context.Context, name string, at time.Time) error {
	s.cursors[name] = at
	return nil
}

func (s *fakeFindings) RequestExplains(context.Context, string, string, string) (bool, error) {
	return false, nil
}

func (s *fakeFindings) KeyGeneration(_ context.Context, base string) (time.Time, error) {
	return s.cursors[keyCursor(base)], nil
}

func (s *fakeFindings) NewKeyGeneration(_ context.Context, base string, at time.Time) error {
	s.cursors[keyCursor(base)] = at
	return nil
}

func (s *fakeFindings) DropKeyGeneration(_ context.Context, base string) error {
	delete(s.cursors, keyCursor(base))
	return nil
}

func (s *fakeFindings) DropKeyGenerationsBefore(_ context.Context, before time.Time) error {
	for name, at := range s.cursors {
		if strings.HasPrefix(name, "key:") && at.Before(before) {
			delete(s.cursors, name)
		}
	}
	return nil
}

// find returns the finding of kind about the provider's object.
func (s *fakeFindings) find(kind, providerID string) (Finding, bool) {
	for k, f := range s.rows {
		if k[0] == kind && k[1] == providerID {
			return f, true
		}
	}
	return Finding{}, false
}

// rig is a reconciler on fakes: two charges of no order (ch_1, ch_2), an order
// paid by pi_3 (its charge ch_3), and a refund of it made in the provider's
// dashboard (re_dash).
type rig struct {
	pay      *fakeProvider
	orders   *fakeOrders
	engine   *fakeEngine
	findings *fakeFindings
	metrics  Metrics
	rec      *Reconciler
}

func newRig(t *testing.T) *rig {
	t.Helper()
	now := time.Now()
	orphan := func(id string, amount int64, age time.Duration) provider.Charge {
		return provider.Charge{ID: id, Amount: amount, Currency: "usd", Status: "succeeded",
			Metadata: map[string]string{"order_id": "ord_gone_" + id}, Created: now.Add(-age)}
	}
	r := &rig{
		pay: &fakeProvider{
			charges: []provider.Charge{orphan("ch_1", 700, 3*time.Minute), orphan("ch_2", 500, 2*time.Minute),
				{ID: "ch_3", Amount: 1000, Currency: "usd", Status: "succeeded", Intent: "pi_3", Refunded: 1000,
					Metadata: map[string]string{"order_id": "ord_3"}, Created: now.Add(-10 * time.Minute)}},
			refunds: []listed[provider.Refund]{{provider.Refund{ID: "re_dash", Charge: "ch_3", Intent: "pi_3", Amount: 1000,
				Status: "succeeded"}, now.Add(-time.Minute)}},
			saved: map[string]error{}, refused: map[string]*provider.Error{}, faults: map[string]int{},
		},
		engine:   &fakeEngine{known: map[string]Known{}, started: map[string]time.Time{}, closed: map[string]bool{}},
		findings: &fakeFindings{rows: map[[3]string]Finding{}, cursors: map[string]time.Time{}, rebuilt: map[string]Known{}},
		metrics:  NewMetrics(prometheus.NewRegistry()),
	}
	r.orders = &fakeOrders{noted: map[string]string{}, byID: map[string]orderstore.Standing{"ord_3": {Tenant: "acme", WorkflowID: "order:acme:1",
		Status: order.StatusPaid, PaymentRef: "pi_3", Amount: 1000, Currency: "usd"}}}
	r.rec = New(r.engine, r.pay, r.orders, fakeLedger{"pi_3": "ord_3"}, r.findings, r.metrics,
		Options{Grace: time.Minute, Overlap: 5 * time.Minute, FirstLookback: time.Hour, RefundOrphans: true})
	return r
}

// pass runs a pass that must complete.
func (r *rig) pass(t *testing.T, name string) Report {
	t.Helper()
	rep, err := r.rec.Pass(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rep
}

// action is what was last done about the finding of kind on the object, "" for
// no finding.
func (r *rig) action(kind, providerID string) string {
	f, _ := r.findings.find(kind, providerID)
	return f.Action
}

// One orphan charge's refund that answers a saved 500 (replayed to its key for a
// day) stops nothing: the pass refunds the other orphan and has the paid order
// follow its dashboard refund, records the failure, and completes; the next pass
// lists the charge again and refunds it with a new key.
func TestASavedServerErrorOfOneRefundStopsNothingAndANewKeyRefunds(t *testing.T) {
	r := newRig(t)
	r.pay.saved["reconcile:refund:ch_1"] = &provider.Error{StatusCode: 500, Type: "api_error",
		Message: "an error occurred for pm_1Q2w3e4r5t6y7u8i", Replayed: true}

	rep := r.pass(t, "the first pass")
	if n := r.pay.refundsOf("ch_2"); n != 1 {
		t.Errorf("the second orphan charge refunded %d times, want 1", n)
	}
	if len(r.engine.followed) != 1 || r.engine.followed[0] != "ord_3 re_dash" {
		t.Errorf("follows %v, want the paid order to follow the dashboard's refund", r.engine.followed)
	}
	f, ok := r.findings.find(KindChargeWithoutOrder, "ch_1")
	if !ok || f.Action != ActionFailed || !strings.Contains(f.Detail, "500") || strings.Contains(f.Detail, "pm_1Q2w") {
		t.Errorf("the failed refund's finding: %+v, want action_failed with the error, scrubbed", f)
	}
	if rep.Failed != 1 || r.pay.refundsOf("ch_1") != 0 {
		t.Errorf("report %+v and %d refunds of ch_1: want one failure and none", rep, r.pay.refundsOf("ch_1"))
	}
	if got := testutil.ToFloat64(r.metrics.Found.WithLabelValues(KindChargeWithoutOrder, ActionFailed)); got != 1 {
		t.Errorf("counted %v failed refunds, want 1", got)
	}

	r.pass(t, "the second pass")
	keys := r.pay.keysFor("ch_1")
	if len(keys) != 2 || keys[1] == keys[0] || !strings.HasPrefix(keys[1], "reconcile:refund:ch_1:") {
		t.Fatalf("the refund keys of ch_1: %q, want the saved one, then a new generation's", keys)
	}
	if r.pay.refundsOf("ch_1") != 1 || r.pay.refundsOf("ch_2") != 1 || len(r.pay.keysFor("ch_2")) != 1 {
		t.Errorf("ch_1 refunded %d times, ch_2 %d times with %d requests: want each once",
			r.pay.refundsOf("ch_1"), r.pay.refundsOf("ch_2"), len(r.pay.keysFor("ch_2")))
	}
	if a := r.action(KindChargeWithoutOrder, "ch_1"); a != ActionRefunded {
		t.Errorf("ch_1's finding is %q, want refunded", a)
	}
	if _, kept := r.findings.cursors[keyCursor("reconcile:refund:ch_1")]; kept {
		t.Errorf("ch_1's key generation kept after its refund")
	}
}

// A 500 not yet replayed is tried again with the same key, which may still get an
// answer; once that key replays it, the next pass sends a new generation's.
func TestAnUnsavedServerErrorKeepsItsKeyUntilItIsReplayed(t *testing.T) {
	r := newRig(t)
	r.pay.faults["ch_1"] = 1
	for i := range 3 {
		r.pass(t, fmt.Sprintf("pass %d", i+1))
	}
	keys := r.pay.keysFor("ch_1")
	if len(keys) != 3 || keys[0] != "reconcile:refund:ch_1" || keys[1] != keys[0] || keys[2] == keys[0] {
		t.Fatalf("the refund keys of ch_1: %q, want the first key twice, then a new one", keys)
	}
	if r.pay.refundsOf("ch_1") != 1 || r.action(KindChargeWithoutOrder, "ch_1") != ActionRefunded {
		t.Errorf("ch_1 refunded %d times, its finding %q", r.pay.refundsOf("ch_1"), r.action(KindChargeWithoutOrder, "ch_1"))
	}
}

// A refund the provider refuses (a disputed charge) is a finding left to a
// person: no new key, and the cursor moves on past the charge.
func TestARefusedRefundIsAFindingAndTheCursorMovesOn(t *testing.T) {
	r := newRig(t)
	r.pay.refused["ch_1"] = &provider.Error{StatusCode: 400, Type: "invalid_request_error", Code: "charge_disputed",
		Message: "the charge is disputed"}
	began := time.Now()
	r.pass(t, "the pass")
	f, _ := r.findings.find(KindChargeWithoutOrder, "ch_1")
	if f.Action != ActionFailed || !strings.Contains(f.Detail, "charge_disputed") {
		t.Errorf("the refused refund's finding: %+v", f)
	}
	if r.pay.refundsOf("ch_2") != 1 || len(r.engine.followed) != 1 {
		t.Errorf("ch_2 refunded %d times, follows %v: want the rest of the pass done", r.pay.refundsOf("ch_2"), r.engine.followed)
	}
	if at := r.findings.cursors[cursorName]; at.Before(began) {
		t.Errorf("the cursor at %s, before the pass began (%s): held for a refusal", at, began)
	}
	if _, ok := r.findings.cursors[keyCursor("reconcile:refund:ch_1")]; ok {
		t.Errorf("a new key generation for a refusal")
	}
}

// A follow that fails is a finding, and the next pass lists the refund again and
// has the order follow it.
func TestAFailedFollowIsTriedAgainByTheNextPass(t *testing.T) {
	r := newRig(t)
	r.engine.followErrs = []error{errors.New("temporal: deadline exceeded")}
	r.pass(t, "the first pass")
	if a := r.action(KindRefundElsewhere, "re_dash"); a != ActionFailed || len(r.engine.followed) != 0 {
		t.Fatalf("after a failed follow: finding %q, follows %v", a, r.engine.followed)
	}
	r.pass(t, "the second pass")
	if a := r.action(KindRefundElsewhere, "re_dash"); a != ActionOrderFollowed || len(r.engine.followed) != 1 {
		t.Errorf("after the next pass: finding %q, follows %v; want the order to follow the refund", a, r.engine.followed)
	}
}

// A list that cannot be read fails the pass, after the rest of it ran (a paid
// order follows its dashboard refund though the charges could not be listed):
// the cursor stays, and the pass is not counted as completed.
func TestAFailedListFailsThePassButNotTheRest(t *testing.T) {
	r := newRig(t)
	before := time.Now().Add(-time.Minute)
	r.findings.cursors[cursorName] = before
	r.metrics.LastPass.Set(1)
	r.pay.listErr = errors.New("payment provider: 503")
	if _, err := r.rec.Pass(context.Background()); err == nil {
		t.Fatal("a pass whose charges could not be listed completed")
	}
	if len(r.engine.followed) != 1 || r.action(KindRefundElsewhere, "re_dash") != ActionOrderFollowed {
		t.Errorf("follows %v: want the order to follow the dashboard's refund all the same", r.engine.followed)
	}
	if at := r.findings.cursors[cursorName]; !at.Equal(before) {
		t.Errorf("the cursor moved to %s", at)
	}
	if got := testutil.ToFloat64(r.metrics.LastPass); got != 1 {
		t.Errorf("the last completed pass at %v, want it unchanged", got)
	}
	r.pay.listErr = nil
	r.pass(t, "the next pass")
	if r.pay.refundsOf("ch_1") != 1 || r.pay.refundsOf("ch_2") != 1 {
		t.Errorf("ch_1 and ch_2 refunded %d and %d times by the next pass", r.pay.refundsOf("ch_1"), r.pay.refundsOf("ch_2"))
	}
	if got := testutil.ToFloat64(r.metrics.LastPass); got < float64(before.Unix()) {
		t.Errorf("the last completed pass at %v after a completed pass", got)
	}
	failed, completed := testutil.ToFloat64(r.metrics.Passes.WithLabelValues(passFailed)), testutil.ToFloat64(r.metrics.Passes.WithLabelValues(passCompleted))
	if failed != 1 || completed != 1 {
		t.Errorf("passes counted: %v failed, %v completed; want 1 and 1", failed, completed)
	}
}
