// Package reconcile compares what the payment provider holds, what the workflow
// engine runs and what the ledger says, repairs what it can and records every
// discrepancy with what was done about it. A pass is idempotent: a discrepancy
// found again is not a new one, and a repair sent again sends the same key.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/internal/provider"
)

// Kinds of discrepancy.
const (
	// KindWorkflowClosed: an order whose payment had not settled, whose workflow
	// closed (terminated, cancelled, timed out, failed) or is gone.
	KindWorkflowClosed = "workflow_closed"
	// KindChargeWithoutOrder: a succeeded charge that names no order of ours.
	KindChargeWithoutOrder = "charge_without_order"
	// KindChargeOnUnpaidOrder: a succeeded charge, not refunded, on an order that
	// ended without payment (declined, cancelled, failed).
	KindChargeOnUnpaidOrder = "charge_on_unpaid_order"
	// KindChargeNotTheOrders: a second charge on a paid order, on an intent that is
	// not the order's payment.
	KindChargeNotTheOrders = "charge_not_the_orders"
	// KindRefundElsewhere, KindDispute: a refund someone else made of a paid
	// order's payment (the dashboard, a support tool), a dispute by the
	// cardholder's bank. The order follows them.
	KindRefundElsewhere = "refund_elsewhere"
	// KindRefundFailed: a refund of a paid order's payment that the provider
	// failed after it succeeded (or while pending): the order follows it back.
	KindRefundFailed = "refund_failed"
	KindDispute      = "dispute"
	// KindOpenIntent: an intent of ours still open (it could take a card through its
	// client secret) on an order that ended without it.
	KindOpenIntent = "open_intent"
	// KindUnchecked: an object a pass could not look at (reading it failed); a
	// later pass looks again.
	KindUnchecked = "unchecked"
	// KindCursorAhead: the provider side's cursor was later than the pass's start
	// (a database restored from a newer dump than the provider's view, a clock
	// set back): the pass read as a first pass does.
	KindCursorAhead = "cursor_ahead"
	// KindRepairFailed: a run `worker orders repair` could not reset (its
	// provider_id holds the run); a second repair tries it again.
	KindRepairFailed = "repair_failed"
)

// Actions taken on a discrepancy.
const (
	ActionRecoveryStarted = "recovery_started" // a run that settles the order by its intent
	ActionRefunded        = "refunded"
	ActionReported        = "reported"       // left to a person (RECONCILE_REFUND_ORPHANS off)
	ActionOrderFollowed   = "order_followed" // the order was moved to what the provider holds
	ActionCancelled       = "cancelled"      // the intent was cancelled at the provider
	// ActionDisputeNoted: an order that had ended keeps its status and shows the
	// dispute of its payment (its dispute field).
	ActionDisputeNoted = "dispute_noted"
	ActionReread       = "reread" // the provider was read from the first lookback
	// ActionFailed: the repair (or the read) failed; the detail says why. A later
	// pass tries again when trying can help, and its success replaces this action.
	ActionFailed = "action_failed"
)

// Engine is the workflow engine as a pass sees it.
type Engine interface {
	// Running reports whether the workflow has an open run.
	Running(ctx context.Context, workflowID string) (bool, error)
	// Recover starts the run that settles an unsettled order by its intent ("" when
	// the ledger names none).
	Recover(ctx context.Context, o orderstore.Unsettled, intentID string) error
	// Follow starts the run that moves a paid order to what the provider holds of
	// its payment, once per trigger (a refund's or dispute's ID).
	Follow(ctx context.Context, o order.Order, intentID, trigger string) error
	// Known returns what the order's workflow says of it: the order it was
	// started with and its payment. False when the workflow is gone, or closed
	// without a result.
	Known(ctx context.Context, workflowID string) (Known, bool, error)
	// Lost finds the workflow of the tenant's order among those started between
	// from and to, and returns what it says of the order; false when none is
	// the order's.
	Lost(ctx context.Context, tenant, orderID string, from, to time.Time) (Known, bool, error)
	// Retention is how long the engine keeps a closed workflow.
	Retention(ctx context.Context) (time.Duration, error)
}

// Provider is the payment provider as a pass sees it: lists, and refunds.
type Provider interface {
	// The lists hand page one page of objects at a time: however far back a pass
	// reads (a restored cursor), it holds one page.
	ListCharges(ctx context.Context, since time.Time, page func([]provider.Charge) error) error
	ListRefundsSince(ctx context.Context, since time.Time, page func([]provider.Refund) error) error
	ListDisputes(ctx context.Context, since time.Time) ([]provider.Dispute, error)
	ListIntents(ctx context.Context, since time.Time, page func([]provider.Intent) error) error
	CancelIntent(ctx context.Context, key, intentID string) (provider.Intent, error)
	RefundCharge(ctx context.Context, key, chargeID string, amount int64, metadata map[string]string) (provider.Refund, error)
}

// Orders is the read model as a pass sees it.
type Orders interface {
	Unsettled(ctx context.Context, before time.Time, limit int) ([]orderstore.Unsettled, error)
	Standings(ctx context.Context, ids []string) (map[string]orderstore.Standing, error)
	NoteDispute(ctx context.Context, id, status string) (bool, error)
}

// Ledger names an order's intent.
type Ledger interface {
	IntentOfOrder(ctx context.Context, orderID string) (string, error)
	OrderOfIntent(ctx context.Context, intentID string) (string, error)
}

// Findings is where a pass records what it found and where it stands (Store).
type Findings interface {
	Record(ctx context.Context, f Finding) (bool, error)
	Cursor(ctx context.Context, name string) (time.Time, bool, error)
	SetCursor(ctx context.Context, name string, at time.Time) error
	RequestExplains(ctx context.Context, tenant, id, providerRefundID string) (bool, error)
	KeyGeneration(ctx context.Context, base string) (time.Time, error)
	NewKeyGeneration(ctx context.Context, base string, at time.Time) error
	DropKeyGeneration(ctx context.Context, base string) error
	DropKeyGenerationsBefore(ctx context.Context, before time.Time) error
	// Rebuild writes back an order and its payment that the table lost, and the
	// finding that says so, together; true when it wrote.
	Rebuild(ctx context.Context, k Known, f Finding) (bool, error)
}

// Options are a reconciler's policy.
type Options struct {
	// Grace is how long an order stays unsettled before its workflow is looked at:
	// a workflow being started is not a closed one.
	Grace time.Duration
	// Overlap is how far before the last pass's start the provider side reads
	// again, for charges whose creation time came before a pass that missed them.
	Overlap time.Duration
	// FirstLookback is how far back the first pass reads the provider.
	FirstLookback time.Duration
	// RefundOrphans refunds a charge that belongs to no order that shows it;
	// without it the charge is reported only.
	RefundOrphans bool
}

// Report is what one pass did.
type Report struct {
	Since            time.Time
	Unsettled        int // orders not settled, older than the grace
	Recovered        int // of them, with a closed workflow: recovery runs started
	Charges          int // charges read from the provider
	Refunds          int // refunds and disputes read from the provider
	Findings         int // discrepancies found for the first time
	Failed           int // repairs or reads of one object that failed: findings, tried again later
	ProviderRequests int
}

// Reconciler runs passes.
type Reconciler struct {
	engine   Engine
	provider Provider
	orders   Orders
	ledger   Ledger
	findings Findings
	opts     Options
	found    *prometheus.CounterVec
	lastPass prometheus.Gauge
	passes   *prometheus.CounterVec
}

// Metrics are the reconciler's, registered in reg.
type Metrics struct {
	Found    *prometheus.CounterVec
	LastPass prometheus.Gauge
	// Passes counts passes by result: completed, or failed (a read that left part
	// of a side unexamined; the next pass reads it again).
	Passes *prometheus.CounterVec
}

// The results of orderflow_reconcile_passes_total.
const (
	passCompleted = "completed"
	passFailed    = "failed"
)

// NewMetrics registers the reconciler's metrics in reg.
func NewMetrics(reg prometheus.Registerer) Metrics {
	m := Metrics{
		Found: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "orderflow_reconcile_discrepancies_total",
			Help: "Discrepancies the reconciler found between the provider, the engine and the ledger, by kind and what was done."},
			[]string{"kind", "action"}),
		LastPass: prometheus.NewGauge(prometheus.GaugeOpts{Name: "orderflow_reconcile_last_pass_timestamp_seconds",
			Help: "When the last reconcile pass this process ran completed, or the process started if none has."}),
		Passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "orderflow_reconcile_passes_total",
			Help: "Reconcile passes this process ran, by result: completed, or failed (the next pass reads again what it left)."},
			[]string{"result"}),
	}
	m.Passes.WithLabelValues(passCompleted)
	m.Passes.WithLabelValues(passFailed)
	// Every pair a pass can count, at zero: an alert sees the series before the
	// first discrepancy.
	for _, kind := range []string{KindChargeWithoutOrder, KindChargeOnUnpaidOrder, KindChargeNotTheOrders} {
		m.Found.WithLabelValues(kind, ActionRefunded)
		m.Found.WithLabelValues(kind, ActionReported)
	}
	m.Found.WithLabelValues(KindWorkflowClosed, ActionRecoveryStarted)
	m.Found.WithLabelValues(KindRefundElsewhere, ActionOrderFollowed)
	m.Found.WithLabelValues(KindRefundElsewhere, ActionReported)
	m.Found.WithLabelValues(KindRefundFailed, ActionOrderFollowed)
	m.Found.WithLabelValues(KindRefundFailed, ActionReported)
	m.Found.WithLabelValues(KindRefundWorkflowEnded, ActionReservationReleased)
	m.Found.WithLabelValues(KindRefundWorkflowEnded, ActionRefundSettled)
	m.Found.WithLabelValues(KindRefundRowLost, ActionRebuilt)
	m.Found.WithLabelValues(KindDispute, ActionOrderFollowed)
	m.Found.WithLabelValues(KindDispute, ActionDisputeNoted)
	m.Found.WithLabelValues(KindRowRebuilt, ActionRebuilt)
	m.Found.WithLabelValues(KindCursorAhead, ActionReread)
	m.Found.WithLabelValues(KindOpenIntent, ActionCancelled)
	for _, kind := range []string{KindWorkflowClosed, KindChargeWithoutOrder, KindChargeOnUnpaidOrder, KindChargeNotTheOrders,
		KindRefundElsewhere, KindRefundFailed, KindRefundWorkflowEnded, KindRefundRowLost, KindDispute, KindOpenIntent, KindUnchecked} {
		m.Found.WithLabelValues(kind, ActionFailed)
	}
	// A process that has completed no pass counts from its start: a fleet that
	// restarted and never completes one is a stalled reconciler too, and the
	// stall alert sees it three intervals later.
	m.LastPass.SetToCurrentTime()
	reg.MustRegister(m.Found, m.LastPass, m.Passes)
	return m
}

// New returns a reconciler.
func New(e Engine, p Provider, o Orders, l Ledger, f Findings, m Metrics, opts Options) *Reconciler {
	return &Reconciler{engine: e, provider: p, orders: o, ledger: l, findings: f, opts: opts, found: m.Found, lastPass: m.LastPass, passes: m.Passes}
}

// ProviderRate is the most requests a second a pass sends the provider (give its
// client provider.Paced): a tenth of Stripe's live limit, the rest left to
// payments. A list page holds 100 objects, so a pass reads 1,000 a second.
const ProviderRate = 10

// disputeWindow is how far back a pass reads disputes: Stripe's disputes are
// decided within about 75 days of their opening.
const disputeWindow = 120 * 24 * time.Hour

// maxUnsettled bounds the orders one pass looks at; the next pass takes the rest.
const maxUnsettled = 1000

// cursorName is the provider side's cursor.
const cursorName = "provider_charges"

// pass is what one pass has done so far.
type pass struct {
	start time.Time
	since time.Time // where the provider side reads from
	rep   Report
	// reread is the earliest creation time of an object whose failed repair a
	// later pass tries again; zero for none.
	reread time.Time
}

// rereadFrom has the next pass list again what was created at or after at.
func (p *pass) rereadFrom(at time.Time) {
	if p.reread.IsZero() || at.Before(p.reread) {
		p.reread = at
	}
}

// Pass runs one pass: the engine side, then the provider side. A repair of one
// object that fails (a refund, a cancel, a follow, a recovery run) is a finding
// and the pass goes on with the others. Only a read that leaves the rest of a
// side unexamined (the cursor, a list) fails the pass, after the other side has
// run; the cursor then stays where it was, and the pass does not count as
// completed.
func (r *Reconciler) Pass(ctx context.Context) (Report, error) {
	rep, err := r.runPass(ctx)
	result := passCompleted
	if err != nil {
		result = passFailed
	}
	r.passes.WithLabelValues(result).Inc()
	return rep, err
}

func (r *Reconciler) runPass(ctx context.Context) (Report, error) {
	p := &pass{start: time.Now()}
	engineErr := errors.Join(r.engineSide(ctx, p), r.requestsSide(ctx, p))
	if err := r.providerSides(ctx, p); err != nil {
		return p.rep, errors.Join(engineErr, err)
	}
	// The cursor is the provider side's alone: it moves even when the engine
	// side, which reads every unsettled order each pass, failed.
	if err := r.findings.SetCursor(ctx, cursorName, r.nextCursor(p)); err != nil {
		return p.rep, errors.Join(engineErr, err)
	}
	// The provider forgets a key after a day: so can a generation.
	if err := r.findings.DropKeyGenerationsBefore(ctx, p.start.Add(-keyLife)); err != nil {
		return p.rep, errors.Join(engineErr, err)
	}
	if engineErr != nil {
		return p.rep, engineErr
	}
	r.lastPass.SetToCurrentTime()
	return p.rep, nil
}

// keyLife is how long the provider keeps a key's answer.
const keyLife = 24 * time.Hour

// retryWindow bounds how far behind its pass's start the cursor stays for a
// failed repair: every pass reads again all that was created since, so an object
// still failing after an hour of passes is left to a person (its action_failed
// finding, the alert on it).
const retryWindow = time.Hour

// nextCursor is where the next pass reads from (less the overlap): this pass's
// start, or, when a repair failed that a later pass tries again, no later than
// the failed object's creation, so the next pass lists it again with what it is
// now (a charge refunded meanwhile is not refunded again). Holding the cursor,
// rather than keeping a list of failed objects, re-reads them by the lists a pass
// reads anyway: refunds and intents are read by no other consistent means, and
// their creation time is not known, so a failure of one holds the whole window.
func (r *Reconciler) nextCursor(p *pass) time.Time {
	at := p.start
	if !p.reread.IsZero() && p.reread.Add(r.opts.Overlap).Before(at) {
		at = p.reread.Add(r.opts.Overlap)
	}
	if floor := p.start.Add(-retryWindow); at.Before(floor) {
		at = floor
	}
	return at
}

// engineSide starts a recovery run for each unsettled order whose workflow is not
// running.
func (r *Reconciler) engineSide(ctx context.Context, p *pass) error {
	unchecked := func(o orderstore.Unsettled, err error) error {
		return r.failed(ctx, p, Finding{Kind: KindUnchecked, OrderID: o.ID, Tenant: o.Tenant, Amount: o.Amount, Currency: o.Currency}, err)
	}
	unsettled, closed, err := r.workflowless(ctx, p.start, unchecked)
	if err != nil {
		return err
	}
	p.rep.Unsettled = unsettled
	for _, o := range closed {
		if err := r.recover(ctx, p, o); err != nil {
			return err
		}
	}
	return nil
}

// recover starts the recovery run of an unsettled order whose workflow is not
// running. A failure is a finding: the next pass, which reads every unsettled
// order, tries again.
func (r *Reconciler) recover(ctx context.Context, p *pass, o orderstore.Unsettled) error {
	f := workflowClosed(o)
	done, err := r.rebuildUnsettled(ctx, p, o)
	if err != nil {
		return r.failed(ctx, p, Finding{Kind: KindUnchecked, OrderID: o.ID, Tenant: o.Tenant, Amount: o.Amount, Currency: o.Currency},
			fmt.Errorf("read the workflow of order %s: %w", o.ID, err))
	}
	if done {
		return nil
	}
	intent, err := r.ledger.IntentOfOrder(ctx, o.ID)
	if err == nil && intent == "" {
		// The ledger may have lost it (a restore): a run given no intent ends the
		// order CANCELLED, so the provider is asked first.
		intent, err = r.intentAtProvider(ctx, p, o)
	}
	if err == nil {
		f.ProviderID = intent
		err = r.engine.Recover(ctx, o, intent)
	}
	if err != nil {
		return r.failed(ctx, p, f, fmt.Errorf("recover order %s: %w", o.ID, err))
	}
	p.rep.Recovered++
	f.Action = ActionRecoveryStarted
	return r.record(ctx, p, f)
}

// intentAtProvider finds the order's intent among those the provider created
// since the order was (its metadata names the order and its tenant): the one
// that succeeded, or else the newest; "" for none.
func (r *Reconciler) intentAtProvider(ctx context.Context, p *pass, o orderstore.Unsettled) (string, error) {
	var found string
	err := r.provider.ListIntents(ctx, o.CreatedAt.Add(-time.Minute), func(intents []provider.Intent) error {
		p.rep.ProviderRequests++
		for _, pi := range intents { // newest first
			if pi.Metadata["order_id"] != o.ID || pi.Metadata["tenant"] != o.Tenant {
				continue
			}
			if pi.Status == "succeeded" {
				found = pi.ID
				return errStop
			}
			if found == "" {
				found = pi.ID
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", fmt.Errorf("list the intents since order %s: %w", o.ID, err)
	}
	return found, nil
}

// errStop ends a list early: what it looked for is found.
var errStop = errors.New("found")

// workflowless reads the orders unsettled for longer than the grace before now and
// returns how many it read and those whose workflow is not running. An order
// whose workflow cannot be described is given to unchecked, and left out unless
// it returns an error.
func (r *Reconciler) workflowless(ctx context.Context, now time.Time, unchecked func(orderstore.Unsettled, error) error) (int, []orderstore.Unsettled, error) {
	open, err := r.orders.Unsettled(ctx, now.Add(-r.opts.Grace), maxUnsettled)
	if err != nil {
		return 0, nil, fmt.Errorf("read unsettled orders: %w", err)
	}
	var closed []orderstore.Unsettled
	for _, o := range open {
		running, err := r.engine.Running(ctx, o.WorkflowID)
		if err != nil {
			if err := unchecked(o, fmt.Errorf("describe workflow %s: %w", o.WorkflowID, err)); err != nil {
				return 0, nil, err
			}
			continue
		}
		if !running {
			closed = append(closed, o)
		}
	}
	return len(open), closed, nil
}

// workflowClosed is the finding of an unsettled order whose workflow is not running.
func workflowClosed(o orderstore.Unsettled) Finding {
	return Finding{Kind: KindWorkflowClosed, OrderID: o.ID, Tenant: o.Tenant, Amount: o.Amount, Currency: o.Currency,
		Detail: "the order was " + string(o.Status) + " with no running workflow"}
}

// providerSides reads the cursor and runs the provider's three checks from it:
// the charges, the refunds and disputes of others, the open intents. Each runs
// whatever the others did; the error of any (a list that could not be read) is
// the pass's.
func (r *Reconciler) providerSides(ctx context.Context, p *pass) error {
	since, ok, err := r.findings.Cursor(ctx, cursorName)
	switch {
	case err != nil:
		return err
	case ok && since.After(p.start):
		// Restored from a newer database than the provider's view, or the clock
		// went back: read as a first pass would, and say so.
		f := Finding{Kind: KindCursorAhead, Action: ActionReread, ProviderID: cursorName + "@" + since.UTC().Format(time.RFC3339Nano),
			Detail: "the cursor was at " + since.UTC().Format(time.RFC3339) + ", after the pass began: read from the first lookback"}
		if err := r.record(ctx, p, f); err != nil {
			return err
		}
		since = p.start.Add(-r.opts.FirstLookback)
	case ok:
		since = since.Add(-r.opts.Overlap)
	default:
		since = p.start.Add(-r.opts.FirstLookback)
	}
	p.since, p.rep.Since = since, since
	charges := r.providerSide(ctx, p)
	others := r.elsewhere(ctx, p)
	intents := r.openIntents(ctx, p)
	return errors.Join(charges, others, intents)
}

// providerSide checks that every succeeded charge created since the last pass
// belongs to an order that shows it, and refunds (or reports) the others.
func (r *Reconciler) providerSide(ctx context.Context, p *pass) error {
	p.rep.ProviderRequests++ // the first page's, if there is none
	return r.unexplained(ctx, p.since, func(charges int, found []unexplainedCharge) error {
		p.rep.Charges += charges
		p.rep.ProviderRequests++
		return r.repair(ctx, p, found)
	})
}

// repair refunds (or reports) the unexplained charges found, once nobody can
// explain them.
func (r *Reconciler) repair(ctx context.Context, p *pass, found []unexplainedCharge) error {
	for _, u := range found {
		var err error
		if u.finding.Kind == KindChargeWithoutOrder {
			done, err := r.rebuildCharge(ctx, p, u.charge)
			if err != nil {
				return err
			}
			if done {
				continue
			}
		}
		if r.opts.RefundOrphans {
			err = r.refundOrphan(ctx, p, u)
		} else {
			f := u.finding
			f.Action = ActionReported
			err = r.record(ctx, p, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// refundOrphan refunds what is left of an unexplained charge and records it. A
// refund that fails is a finding, tried again by a later pass (providerFailed).
func (r *Reconciler) refundOrphan(ctx context.Context, p *pass, u unexplainedCharge) error {
	c, f := u.charge, u.finding
	base := "reconcile:refund:" + c.ID
	key, err := r.key(ctx, base)
	if err == nil {
		p.rep.ProviderRequests++
		_, err = r.provider.RefundCharge(ctx, key, c.ID, c.Amount-c.Refunded,
			map[string]string{"order_id": c.Metadata["order_id"], "orderflow_reconciled": f.Kind})
	}
	if err != nil {
		return r.providerFailed(ctx, p, f, base, c.Created, fmt.Errorf("refund charge %s (%s): %w", c.ID, f.Kind, err))
	}
	f.Action = ActionRefunded
	return r.done(ctx, p, f, base, key)
}

// unexplainedCharge is a succeeded, unrefunded charge no order shows, and what is
// wrong with it.
type unexplainedCharge struct {
	charge  provider.Charge
	finding Finding
}

// unexplained lists the charges created since since, a page at a time, and
// hands each page's count and its succeeded, unrefunded charges that no order
// shows to found.
func (r *Reconciler) unexplained(ctx context.Context, since time.Time, found func(int, []unexplainedCharge) error) error {
	err := r.provider.ListCharges(ctx, since, func(charges []provider.Charge) error {
		ids := make([]string, 0, len(charges))
		for _, c := range charges {
			ids = append(ids, c.Metadata["order_id"])
		}
		orders, err := r.orders.Standings(ctx, ids)
		if err != nil {
			return fmt.Errorf("read the orders of %d charges: %w", len(charges), err)
		}
		var out []unexplainedCharge
		for _, c := range charges {
			if c.Status != "succeeded" || c.Refunded >= c.Amount {
				continue
			}
			if f, ok := judge(c, orders); ok {
				out = append(out, unexplainedCharge{charge: c, finding: f})
			}
		}
		return found(len(charges), out)
	})
	if err != nil {
		return fmt.Errorf("charges since %s: %w", since.Format(time.RFC3339), err)
	}
	return nil
}

// judge says what is wrong with a succeeded, unrefunded charge, if anything.
func judge(c provider.Charge, orders map[string]orderstore.Standing) (Finding, bool) {
	f := Finding{OrderID: c.Metadata["order_id"], ProviderID: c.ID, Amount: c.Amount - c.Refunded, Currency: c.Currency}
	o, ok := orders[f.OrderID]
	switch {
	case !ok:
		f.OrderID, f.Kind, f.Detail = "", KindChargeWithoutOrder, "no order "+c.Metadata["order_id"]
	case o.Status == order.StatusPaymentDeclined || o.Status == order.StatusCancelled || o.Status == order.StatusFailed:
		f.Tenant, f.Kind, f.Detail = o.Tenant, KindChargeOnUnpaidOrder, "the order is "+string(o.Status)
	case o.Status == order.StatusPaid && o.PaymentRef != "" && o.PaymentRef != c.Intent && o.PaymentRef != c.ID:
		f.Tenant, f.Kind, f.Detail = o.Tenant, KindChargeNotTheOrders, "the order was paid by "+o.PaymentRef
	default:
		return f, false // paid by it, or not settled yet: its workflow's business
	}
	return f, true
}

// record stores a finding and counts it the first time it is found.
func (r *Reconciler) record(ctx context.Context, p *pass, f Finding) error {
	isNew, err := r.findings.Record(ctx, f)
	if err != nil || !isNew {
		return err
	}
	r.counted(p, f)
	return nil
}

// counted counts a new finding in the pass's report and the metric.
func (r *Reconciler) counted(p *pass, f Finding) {
	p.rep.Findings++
	r.found.WithLabelValues(f.Kind, f.Action).Inc()
}

// elsewhere has each paid order follow the refunds and disputes that others made
// of its payment since the last pass (their webhooks may have been lost). A
// refund a refund request made is others' only when the request does not
// explain it.
func (r *Reconciler) elsewhere(ctx context.Context, p *pass) error {
	// Either list failing fails the pass, but what the other lists is followed.
	p.rep.ProviderRequests += 2 // the first pages'
	refundsErr := r.provider.ListRefundsSince(ctx, p.since, func(refunds []provider.Refund) error {
		p.rep.Refunds += len(refunds)
		p.rep.ProviderRequests++
		for _, re := range refunds {
			if err := r.followRefund(ctx, p, re); err != nil {
				return err
			}
		}
		return nil
	})
	if refundsErr != nil {
		refundsErr = fmt.Errorf("refunds since %s: %w", p.since.Format(time.RFC3339), refundsErr)
	}
	// Disputes change long after they are opened (a bank takes weeks): every one
	// of the last disputeWindow is read, and each of its statuses is a trigger.
	disputes, err := r.provider.ListDisputes(ctx, time.Now().Add(-disputeWindow))
	if err != nil {
		return errors.Join(refundsErr, fmt.Errorf("list disputes: %w", err))
	}
	p.rep.Refunds += len(disputes)
	p.rep.ProviderRequests += len(disputes) / 100
	for _, d := range disputes {
		if d.Intent == "" {
			continue
		}
		if err := r.follow(ctx, p, trigger{d.ID + ":" + d.Status, d.Intent, KindDispute, "", false, d.Status}); err != nil {
			return errors.Join(refundsErr, err)
		}
	}
	return refundsErr
}

// followRefund has the paid order of a refund listed since the cursor follow it:
// one others made (or a request that does not explain it), or one the provider
// failed after it succeeded or while pending, which gives its share back.
func (r *Reconciler) followRefund(ctx context.Context, p *pass, re provider.Refund) error {
	if re.Intent == "" || re.Metadata["orderflow_reconciled"] != "" {
		return nil
	}
	switch re.Status {
	case "succeeded", "pending":
		if re.Metadata["orderflow_refund_key"] != "" {
			return nil
		}
		if err := r.rebuildRequest(ctx, p, re); err != nil {
			return r.failed(ctx, p, Finding{Kind: KindRefundRowLost, ProviderID: re.ID}, err)
		}
		return r.follow(ctx, p, trigger{re.ID, re.Intent, KindRefundElsewhere, re.Metadata[refundRequestField], true, ""})
	case "failed", "canceled":
		return r.follow(ctx, p, trigger{re.ID + ":" + re.Status, re.Intent, KindRefundFailed, "", true, ""})
	}
	return nil
}

// refundRequestField is the refund metadata that names the refund request that
// made a refund (activities' refundRequestField).
const refundRequestField = "orderflow_refund_request"

// trigger is a refund or dispute at the provider that a paid order may have to
// follow; request is the refund request a refund names, if any; listed, that it
// was listed since the cursor (a dispute is read again by every pass).
type trigger struct {
	id, intent, kind, request string
	listed                    bool
	dispute                   string // a dispute's status
}

// follow has the paid order of tr's intent follow it and records the finding,
// unless the refund request that made it explains it (its row shows it, or it is
// on its way). A failure is a finding; the next pass lists tr again.
func (r *Reconciler) follow(ctx context.Context, p *pass, tr trigger) error {
	o, detail, ended, err := r.followed(ctx, tr)
	if err != nil {
		if tr.listed {
			p.rereadFrom(p.since)
		}
		return r.failed(ctx, p, Finding{Kind: KindUnchecked, OrderID: o.ID, Tenant: o.Tenant, ProviderID: tr.id}, err)
	}
	if detail == "" {
		return nil
	}
	f := Finding{Kind: tr.kind, Action: ActionOrderFollowed, OrderID: o.ID, Tenant: o.Tenant,
		ProviderID: tr.id, Amount: o.Amount, Currency: o.Currency, Detail: detail}
	if ended && tr.kind == KindDispute {
		return r.noteDispute(ctx, p, tr, f)
	}
	if ended {
		f.Action = ActionReported
		return r.record(ctx, p, f)
	}
	if err := r.engine.Follow(ctx, o, tr.intent, tr.id); err != nil {
		if tr.listed {
			p.rereadFrom(p.since)
		}
		return r.failed(ctx, p, f, fmt.Errorf("follow %s of order %s: %w", tr.id, o.ID, err))
	}
	return r.record(ctx, p, f)
}

// followed returns the paid order that must follow tr and why; no why when none
// must (the intent pays no order of ours, the order ended otherwise, or the
// refund request that made the refund explains it). ended: tr is a dispute of an
// order that had ended (CANCELLED, FAILED, REFUNDED), which keeps its status
// and shows the dispute, or a refund others made of an order that ended
// CANCELLED or FAILED (its own refund gave back the rest), only reported.
func (r *Reconciler) followed(ctx context.Context, tr trigger) (o order.Order, why string, ended bool, err error) {
	orderID, err := r.ledger.OrderOfIntent(ctx, tr.intent)
	if err != nil || orderID == "" {
		return order.Order{}, "", false, err
	}
	orders, err := r.orders.Standings(ctx, []string{orderID})
	if err != nil {
		return order.Order{ID: orderID}, "", false, fmt.Errorf("read order %s: %w", orderID, err)
	}
	st, ok := orders[orderID]
	if !ok || st.PaymentRef != tr.intent {
		return order.Order{}, "", false, nil // not paid by it: the charges' check covers it
	}
	o = order.Order{ID: orderID, Tenant: st.Tenant, WorkflowID: st.WorkflowID, Amount: st.Amount, Currency: st.Currency}
	switch {
	case tr.kind == KindDispute && endsDisputed(st.Status):
		return o, "a dispute (" + tr.dispute + ") of an order that is " + string(st.Status), true, nil
	case !order.AfterPayment(st.Status) && tr.kind == KindRefundElsewhere && tr.request == "" &&
		(st.Status == order.StatusCancelled || st.Status == order.StatusFailed):
		// Its own refund gave back the rest; reported, so someone sees who else did.
		return o, "made at the provider by others, of an order that is " + string(st.Status), true, nil
	case !order.AfterPayment(st.Status) && tr.kind == KindRefundFailed &&
		(st.Status == order.StatusCancelled || st.Status == order.StatusFailed):
		// A refund to a card that cannot take it fails again: the customer is
		// refunded by other means, so a person must see it.
		return o, "the provider failed a refund of an order that is " + string(st.Status) +
			": what it gave back is charged again; refund the customer by other means", true, nil
	case !order.AfterPayment(st.Status):
		return order.Order{}, "", false, nil // ended otherwise: the charges' check covers it
	case tr.request == "":
		return o, "made at the provider by others", false, nil
	}
	explained, err := r.findings.RequestExplains(ctx, st.Tenant, tr.request, tr.id)
	if err != nil || explained {
		return o, "", false, err
	}
	return o, "made for refund request " + tr.request + ", which does not show it", false, nil
}

// endsDisputed reports the statuses of an order that a dispute does not move:
// it shows the dispute instead (Orders.NoteDispute).
func endsDisputed(s order.Status) bool {
	return s == order.StatusCancelled || s == order.StatusFailed || s == order.StatusRefunded
}

// noteDispute has an ended order show a dispute of its payment, and records f
// (counted by the findings metric). A failure is a finding; the next pass reads
// the dispute again.
func (r *Reconciler) noteDispute(ctx context.Context, p *pass, tr trigger, f Finding) error {
	f.Action = ActionDisputeNoted
	if _, err := r.orders.NoteDispute(ctx, f.OrderID, tr.dispute); err != nil {
		return r.failed(ctx, p, f, fmt.Errorf("note %s on order %s: %w", tr.id, f.OrderID, err))
	}
	return r.record(ctx, p, f)
}

// Audit is what a read-only pass found: the discrepancies left, none repaired.
type Audit struct {
	Orders   int // unsettled orders looked at
	Charges  int // charges read from the provider
	Findings []Finding
}

// Audit looks as a pass does, over the charges created since since, and repairs
// nothing: a check that every succeeded charge belongs to an order that shows it
// and no unsettled order is left without its workflow. An order it cannot look
// at fails it: a check must see everything.
func (r *Reconciler) Audit(ctx context.Context, since time.Time) (Audit, error) {
	var a Audit
	unsettled, closed, err := r.workflowless(ctx, time.Now(), func(_ orderstore.Unsettled, err error) error { return err })
	if err != nil {
		return a, err
	}
	a.Orders = unsettled
	for _, o := range closed {
		a.Findings = append(a.Findings, workflowClosed(o))
	}
	err = r.unexplained(ctx, since, func(charges int, found []unexplainedCharge) error {
		a.Charges += charges
		for _, u := range found {
			a.Findings = append(a.Findings, u.finding)
		}
		return nil
	})
	return a, err
}

// openIntents cancels the intents of ours (their metadata names an order of a
// tenant) created since the last pass that are still open on an order that ended
// without them: declined, cancelled or failed, or paid by another intent. Open, an
// intent takes a card through its client secret. Intents that are not ours, and
// those of orders still paying, are left alone.
func (r *Reconciler) openIntents(ctx context.Context, p *pass) error {
	p.rep.ProviderRequests++ // the first page's
	err := r.provider.ListIntents(ctx, p.since, func(intents []provider.Intent) error {
		p.rep.ProviderRequests++
		return r.closeOpen(ctx, p, intents)
	})
	if err != nil {
		return fmt.Errorf("intents since %s: %w", p.since.Format(time.RFC3339), err)
	}
	return nil
}

// closeOpen cancels those of intents that are ours and open on an order that
// ended without them.
func (r *Reconciler) closeOpen(ctx context.Context, p *pass, intents []provider.Intent) error {
	var open []provider.Intent
	var ids []string
	for _, pi := range intents {
		switch pi.Status {
		case "requires_payment_method", "requires_confirmation", "requires_action":
			if pi.Metadata["order_id"] != "" && order.ValidTenant(pi.Metadata["tenant"]) {
				open, ids = append(open, pi), append(ids, pi.Metadata["order_id"])
			}
		}
	}
	if len(open) == 0 {
		return nil
	}
	orders, err := r.orders.Standings(ctx, ids)
	if err != nil {
		return fmt.Errorf("read the orders of %d open intents: %w", len(open), err)
	}
	for _, pi := range open {
		o, ok := orders[pi.Metadata["order_id"]]
		ended := ok && (o.Status == order.StatusPaymentDeclined || o.Status == order.StatusCancelled || o.Status == order.StatusFailed ||
			(order.AfterPayment(o.Status) && o.PaymentRef != pi.ID))
		if !ended || o.Tenant != pi.Metadata["tenant"] {
			continue
		}
		f := Finding{Kind: KindOpenIntent, Action: ActionCancelled, OrderID: pi.Metadata["order_id"],
			Tenant: o.Tenant, ProviderID: pi.ID, Amount: pi.Amount, Detail: "open on an order that is " + string(o.Status)}
		if err := r.cancelIntent(ctx, p, pi, f); err != nil {
			return err
		}
	}
	return nil
}

// cancelIntent cancels an open intent and records f. A cancel that fails is a
// finding, tried again by a later pass (providerFailed).
func (r *Reconciler) cancelIntent(ctx context.Context, p *pass, pi provider.Intent, f Finding) error {
	base := "reconcile:cancel:" + pi.ID
	key, err := r.key(ctx, base)
	if err == nil {
		p.rep.ProviderRequests++
		_, err = r.provider.CancelIntent(ctx, key, pi.ID)
	}
	var perr *provider.Error
	if errors.As(err, &perr) && perr.UnexpectedState() {
		return nil // it moved on meanwhile (a charge is the charges' check's)
	}
	if err != nil {
		// An intent's creation time is not listed: the whole window is read again.
		return r.providerFailed(ctx, p, f, base, p.since, fmt.Errorf("cancel intent %s: %w", pi.ID, err))
	}
	return r.done(ctx, p, f, base, key)
}
