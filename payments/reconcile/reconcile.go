// Package reconcile compares what the payment provider holds, what the workflow
// engine runs and what the ledger says, repairs what it can and records every
// discrepancy with what was done about it. A pass is idempotent: a discrepancy
// found again is not a new one, and a repair sent again sends the same key.
package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/provider"
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
