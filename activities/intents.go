package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/refundstore"
)

// The statuses of a PaymentIntent the workflow acts on (Stripe's names).
const (
	IntentSucceeded             = "succeeded"
	IntentProcessing            = "processing"
	IntentRequiresAction        = "requires_action"
	IntentRequiresConfirmation  = "requires_confirmation"
	IntentRequiresPaymentMethod = "requires_payment_method"
	IntentCanceled              = "canceled"
)

// AuthenticationFailed is the code of an intent whose customer failed (or
// declined) authentication: Stripe's payment_intent_authentication_failure.
const AuthenticationFailed = "payment_intent_authentication_failure"

// IntentInput asks for the order's PaymentIntent, created with Key.
type IntentInput struct {
	Step
	Tenant        string
	PaymentMethod string
}

// IntentResult is the order's PaymentIntent.
type IntentResult struct {
	Key      string
	IntentID string
}

// CreateIntent creates the order's PaymentIntent, unconfirmed, and records its ID
// in the ledger before anything confirms it. Every attempt with the key gets the
// same intent (the provider replays its answer; after the provider's 24 hours, the
// ledger answers). An intent whose creation's answer is lost for good (a saved
// 5xx) is never recorded, so never confirmed: it moves no money, and
// CancelOrphanIntents sweeps it.
func (a *Payments) CreateIntent(ctx context.Context, in IntentInput) (IntentResult, error) {
	p := ledger.Payment{Key: in.Key, Kind: ledger.Intent, OrderID: in.OrderID, Amount: in.Amount, Currency: in.Currency}
	e, err := a.ledger.Open(ctx, p, nil)
	if err != nil {
		return IntentResult{}, err
	}
	if e.Status == ledger.Created && e.ProviderID != "" {
		return IntentResult{Key: in.Key, IntentID: e.ProviderID}, nil
	}
	pm, err := a.paymentMethod(ctx, in)
	if err != nil {
		return IntentResult{}, err
	}
	stop := Heartbeat(ctx)
	pi, err := a.provider.CreateIntent(ctx, in.Key, in.Amount, in.Currency, pm,
		reconcile.IntentMetadata(in.OrderID, in.Tenant, in.WorkflowID))
	if keyReused(err) {
		// The key was first sent by a release whose intents did not name their
		// workflow: its request again gets the intent it made.
		pi, err = a.provider.CreateIntent(ctx, in.Key, in.Amount, in.Currency, pm,
			reconcile.IntentMetadata(in.OrderID, in.Tenant, ""))
	}
	stop()
	if err != nil {
		return IntentResult{}, a.failed(ctx, in.Key, err)
	}
	return IntentResult{Key: in.Key, IntentID: pi.ID}, a.ledger.Settle(ctx, in.Key, ledger.Created, pi.ID)
}

// keyReused reports a key the provider took first with other parameters.
func keyReused(err error) bool {
	var perr *provider.Error
	return errors.As(err, &perr) && perr.KeyReused()
}

// ConfirmInput asks to confirm the order's intent with Key.
type ConfirmInput struct {
	Step
	IntentID string
}

// IntentState is a PaymentIntent as the provider reports it.
type IntentState struct {
	IntentID string
	Status   string
	ChargeID string // its latest charge, once it succeeded
	Declined string // the decline code of its last attempt
}

// ConfirmIntent confirms the order's intent: the one request that charges the card,
// recorded first in the ledger with the order's move to PAYMENT_PENDING. An intent
// succeeds at most once, so no retry, timing or second key can charge twice: a
// confirm refused because the intent is past confirming is answered by reading the
// intent, which says whether it succeeded.
func (a *Payments) ConfirmIntent(ctx context.Context, in ConfirmInput) (IntentState, error) {
	p := ledger.Payment{Key: in.Key, Kind: ledger.Charge, OrderID: in.OrderID, Amount: in.Amount, Currency: in.Currency, IntentID: in.IntentID}
	e, err := a.ledger.Open(ctx, p, a.pending(ctx, in.OrderID))
	if err != nil {
		return IntentState{}, err
	}
	if e.Status == ledger.Succeeded && e.ProviderID != "" {
		return IntentState{IntentID: in.IntentID, Status: IntentSucceeded, ChargeID: e.ProviderID}, nil
	}
	stop := Heartbeat(ctx)
	pi, err := a.provider.ConfirmIntent(ctx, in.Key, in.IntentID)
	stop()
	var perr *provider.Error
	switch {
	case errors.As(err, &perr) && (perr.UnexpectedState() || perr.KeyReused()):
		if pi, err = a.provider.RetrieveIntent(ctx, in.IntentID); err != nil {
			return IntentState{}, a.lookupFailed(err)
		}
	case errors.As(err, &perr) && perr.Declined():
		if serr := a.ledger.Settle(ctx, in.Key, ledger.Declined, ""); serr != nil {
			return IntentState{}, serr
		}
		return IntentState{}, temporal.NewNonRetryableApplicationError(perr.Error(), ErrCardDeclined, nil)
	case err != nil:
		return IntentState{}, a.failed(ctx, in.Key, err)
	}
	return a.record(ctx, in.Key, pi)
}

// PayInput asks for the order's intent, created with Key, then confirmed with
// ConfirmKey.
type PayInput struct {
	IntentInput
	ConfirmKey string
}

// PayResult is the order's intent once confirmed.
type PayResult struct {
	IntentID string
	State    IntentState
}

// PaidWith is the detail of a PayIntent error raised by the confirm: the intent it
// confirmed, which the workflow reads back or confirms again. An error without it
// came from the creation, and no intent of the key is recorded.
type PaidWith struct {
	IntentID string
}

// PayIntent is CreateIntent then ConfirmIntent in one activity: the intent is in
// the ledger before anything confirms it, as with two, and the order's payment
// costs one activity task instead of two. Every attempt sends both keys again, and
// each is answered as before: the creation by the provider's replay (or the
// ledger), the confirm by its own. A confirm's key in use is answered by reading
// the intent, so it is not retried here; refused credentials are, either step.
func (a *Payments) PayIntent(ctx context.Context, in PayInput) (PayResult, error) {
	return Pay(ctx, in, a.CreateIntent, a.ConfirmIntent)
}

// Pay is PayIntent on any creation and confirm (tests give theirs).
func Pay(ctx context.Context, in PayInput,
	create func(context.Context, IntentInput) (IntentResult, error),
	confirm func(context.Context, ConfirmInput) (IntentState, error),
) (PayResult, error) {
	created, err := create(ctx, in.IntentInput)
	if err != nil {
		return PayResult{}, err
	}
	step := in.Step
	step.Key = in.ConfirmKey
	st, err := confirm(ctx, ConfirmInput{Step: step, IntentID: created.IntentID})
	if appErr := (*temporal.ApplicationError)(nil); errors.As(err, &appErr) {
		// The same error, with the intent for the workflow to act on.
		err = temporal.NewApplicationErrorWithOptions(appErr.Message(), appErr.Type(), temporal.ApplicationErrorOptions{
			NonRetryable: appErr.Type() != ErrProviderUnauthorized, Details: []any{PaidWith{IntentID: created.IntentID}},
		})
	}
	return PayResult{IntentID: created.IntentID, State: st}, err
}

// RetrieveInput asks what became of the intent that Key confirmed (or tried to).
type RetrieveInput struct {
	OrderID  string
	IntentID string
	Key      string
}

// RetrieveIntent reads the intent by ID, a strongly consistent read, and settles
// Key's ledger row by it: never by search, never by guessing.
func (a *Payments) RetrieveIntent(ctx context.Context, in RetrieveInput) (IntentState, error) {
	pi, err := a.provider.RetrieveIntent(ctx, in.IntentID)
	if err != nil {
		return IntentState{}, a.lookupFailed(err)
	}
	return a.record(ctx, in.Key, pi)
}

// ErrIntentPending is the retryable error of AwaitIntent while the intent is
// processing or waits on its customer.
const ErrIntentPending = "IntentPending"

// AwaitIntent reads the intent like RetrieveIntent until it leaves processing (or
// waiting on its customer): each read is an attempt of this activity, paced by the
// workflow's retry policy, so a wait of any length adds nothing to the history.
func (a *Payments) AwaitIntent(ctx context.Context, in RetrieveInput) (IntentState, error) {
	st, err := a.RetrieveIntent(ctx, in)
	if err == nil && (st.Status == IntentProcessing || st.Status == IntentRequiresAction) {
		return st, temporal.NewApplicationError("payment intent "+in.IntentID+" is "+st.Status, ErrIntentPending)
	}
	return st, err
}

// AbandonInput asks to cancel the order's intent while it waits on its customer;
// Key is the confirm's, whose ledger row the outcome settles.
type AbandonInput struct {
	RetrieveInput
	CancelKey string
}

// AbandonIntent cancels the order's intent that waits on its customer (who did not
// authenticate in time, or whose order was cancelled). The provider refuses to
// cancel an intent that succeeded or is processing: then the intent, read by ID,
// is the answer, and the order follows it. Either way the confirm's ledger row is
// settled by what the intent shows.
func (a *Payments) AbandonIntent(ctx context.Context, in AbandonInput) (IntentState, error) {
	pi, err := a.provider.CancelIntent(ctx, in.CancelKey, in.IntentID)
	var perr *provider.Error
	if errors.As(err, &perr) && perr.UnexpectedState() {
		return a.RetrieveIntent(ctx, in.RetrieveInput)
	}
	if err != nil {
		return IntentState{}, a.lookupFailed(err) // retried until it answers
	}
	return a.record(ctx, in.Key, pi)
}

// record settles a confirm's ledger row by what the intent shows, once that is
// final: succeeded (unless another key's row holds the intent's one charge);
// declined (it needs another payment method after an attempt); absent (the confirm
// never ran, or the intent was canceled). Processing and requires_action leave the
// row pending.
func (a *Payments) record(ctx context.Context, key string, pi provider.Intent) (IntentState, error) {
	st := IntentState{IntentID: pi.ID, Status: pi.Status, ChargeID: pi.Charge, Declined: pi.Declined}
	var status ledger.Status
	switch pi.Status {
	case IntentSucceeded:
		return st, a.ledger.SettleIntentCharge(ctx, key, pi.ID, pi.Charge)
	case IntentRequiresPaymentMethod:
		status = ledger.Absent
		if pi.Declined != "" {
			status = ledger.Declined
		}
	case IntentRequiresConfirmation, IntentCanceled:
		status = ledger.Absent
		if pi.Declined != "" { // closed after its decline: the row keeps saying so
			status = ledger.Declined
		}
	default:
		return st, nil
	}
	return st, a.ledger.Settle(ctx, key, status, "")
}

// RefundIntentInput asks to refund the order's intent, with Key.
type RefundIntentInput struct {
	Step
	IntentID string
}

// ErrRefundsInFlight is the retryable error of RefundIntent while a refund
// request's reservation has not reached the provider: a reservation is not money,
// so the order's own refund waits to weigh what the request's refund becomes.
const ErrRefundsInFlight = "RefundsInFlight"

// RefundIntent refunds what the order's intent charged and is not yet refunded,
// never more. Its refunds are read first (a consistent list, not search): one of
// ours, under any generation's key, means done; anyone else's that gives money
// back is subtracted, and recorded in the ledger unless a refund request made it
// (its own key's row records it). Then, under the order's refund lock, which
// refund requests' reservations take too: while a request's reservation has
// nothing at the provider, the activity waits (ErrRefundsInFlight, retried) and
// sends nothing; once none has, the ledger row of what is left is opened, and a
// request reserving after it finds the order being refunded in full. The amount
// is the one first recorded for Key, so every attempt sends the same request.
func (a *Payments) RefundIntent(ctx context.Context, in RefundIntentInput) (RefundResult, error) {
	refunds, err := a.provider.IntentRefunds(ctx, in.IntentID)
	if err != nil {
		return RefundResult{}, a.lookupFailed(err)
	}
	left := in.Amount
	for _, re := range refunds {
		if !active(re) {
			continue
		}
		if key := re.Metadata[refundKeyField]; key != "" {
			// Ours: made with this key, or with an earlier generation's whose
			// outcome was unknown. Either way the order is refunded.
			return RefundResult{Key: key, RefundID: re.ID}, a.ledger.Settle(ctx, key, ledger.Succeeded, re.ID)
		}
		left -= re.Amount
		if re.Metadata[refundRequestField] != "" {
			continue
		}
		if err := a.ledger.RecordRefundByOthers(ctx, in.OrderID, in.IntentID, re.ID, re.Amount, in.Currency); err != nil {
			return RefundResult{}, err
		}
	}
	var e ledger.Entry
	inFlight := 0
	err = a.refunds.LockOrder(ctx, in.OrderID, func(tx pgx.Tx) error {
		e, inFlight, err = a.openOwnRefund(ctx, tx, in, left, landed(refunds))
		return err
	})
	switch {
	case err != nil:
		return RefundResult{}, err
	case inFlight > 0:
		return RefundResult{}, temporal.NewApplicationError(fmt.Sprintf("%d refund requests of order %s are not at the provider yet", inFlight, in.OrderID), ErrRefundsInFlight)
	case e.Amount <= 0:
		return RefundResult{Key: in.Key}, nil // refunded in full by others: nothing is left to give back
	}
	stop := Heartbeat(ctx)
	re, err := a.provider.RefundIntent(ctx, in.Key, in.IntentID, e.Amount,
		map[string]string{"order_id": in.OrderID, refundKeyField: in.Key})
	stop()
	if err != nil {
		return RefundResult{}, a.failed(ctx, in.Key, err)
	}
	return RefundResult{Key: in.Key, RefundID: re.ID}, a.ledger.Settle(ctx, in.Key, ledger.Succeeded, re.ID)
}

// openOwnRefund counts the refund requests' reservations that have nothing at
// the provider yet (atProvider, by request: see landed); when there are none, it
// opens the ledger row of left (an Entry of amount 0 when nothing is left), in
// tx, which holds the order's refund lock. The provider's refunds of requests
// were subtracted from left already; a reservation whose refund failed is not
// money and is not subtracted.
func (a *Payments) openOwnRefund(ctx context.Context, tx pgx.Tx, in RefundIntentInput, left int64, atProvider map[string]bool) (ledger.Entry, int, error) {
	orders, err := orderstore.New(tx).Standings(ctx, []string{in.OrderID})
	if err != nil {
		return ledger.Entry{}, 0, err
	}
	reserved, err := refundstore.On(tx).Reserved(ctx, orders[in.OrderID].Tenant, in.OrderID)
	if err != nil {
		return ledger.Entry{}, 0, err
	}
	inFlight := 0
	for _, r := range reserved {
		if _, seen := atProvider[r.ID]; r.Holds() && !seen {
			inFlight++
		}
	}
	if inFlight > 0 || left <= 0 {
		return ledger.Entry{}, inFlight, nil
	}
	p := ledger.Payment{Key: in.Key, Kind: ledger.Refund, OrderID: in.OrderID, Amount: left, Currency: in.Currency, IntentID: in.IntentID}
	e, err := ledger.On(tx).Open(ctx, p, nil)
	return e, 0, err
}

// refundKeyField is the refund metadata that marks orderflow's refunds, with the
// key that made each: the provider does not show idempotency keys.
const refundKeyField = "orderflow_refund_key"

// SweepInput names the order whose orphan intents to cancel, and the one to keep.
type SweepInput struct {
	WorkflowID string
	OrderID    string
	Keep       string
}

// CancelOrphanIntents cancels the order's intents that a lost creation answer left
// unrecorded: they were never confirmed and move no money, but would show as open
// payments at the provider. It finds them by search, which may not show them yet:
// a sweep is hygiene, and no decision waits on it.
func (a *Payments) CancelOrphanIntents(ctx context.Context, in SweepInput) (int, error) {
	intents, err := a.provider.SearchIntents(ctx, in.OrderID)
	if err != nil {
		return 0, a.lookupFailed(err)
	}
	n := 0
	for _, pi := range intents {
		if pi.ID == in.Keep || (pi.Status != IntentRequiresConfirmation && pi.Status != IntentRequiresPaymentMethod) {
			continue
		}
		if _, err := a.provider.CancelIntent(ctx, order.PaymentKey(in.WorkflowID, "cancel "+pi.ID, 0), pi.ID); err != nil {
			return n, fmt.Errorf("cancel orphan intent %s: %w", pi.ID, err)
		}
		n++
	}
	return n, nil
}

// OrderIntent returns the order's intent as the ledger records its creation; ""
// when no creation was answered.
func (a *Payments) OrderIntent(ctx context.Context, orderID string) (string, error) {
	return a.ledger.IntentOfOrder(ctx, orderID)
}
