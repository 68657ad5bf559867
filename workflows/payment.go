package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/orders/order"
)

// maxNewKeyPause caps the pause before a new key after a saved 5xx, doubling from
// sameKeyRetry: a provider failing every request gets a new intent every few
// minutes, not every few seconds.
const maxNewKeyPause = 5 * time.Minute

// newKeyPause is the pause before the key of generation gen+1.
func newKeyPause(gen int) time.Duration {
	return min(sameKeyRetry<<min(gen, 10), maxNewKeyPause)
}

// maxRefundRefusals bounds how often a refund refused by the provider is tried
// again with the next key (someone may have refunded part of it meanwhile).
const maxRefundRefusals = 3

// payByIntent pays the order with one PaymentIntent: created, recorded in the
// ledger, then confirmed, in one activity (PayIntent). An intent succeeds at most
// once, so no timing, retry or lost answer can take the money twice, and every
// unknown outcome of the confirm is settled by reading the intent by ID: never by
// search, never by guessing. It returns true once paid; otherwise it has ended the
// order.
func (r *run) payByIntent(ctx workflow.Context) (bool, error) {
	if r.res.IntentID != "" { // a resumed run has it
		return r.confirmIntent(ctx, nil)
	}
	r.res.Status = order.StatusPaymentPending
	return r.payInOneCall(ctx)
}

// payInOneCall creates and confirms the order's intent, then acts on the confirm
// as confirmIntent does. Only when a creation's answer is lost for good (a saved
// 5xx) does the next generation's key create another: the first, if it exists,
// was never recorded, so it is never confirmed and moves no money; sweepOrphans
// cancels it.
func (r *run) payInOneCall(ctx workflow.Context) (bool, error) {
	for {
		var res activities.PayResult
		err := workflow.ExecuteActivity(r.payIntent, r.payments.PayIntent, activities.PayInput{
			IntentInput: r.intentInput(), ConfirmKey: order.PaymentKey(r.in.Order.WorkflowID, "confirm", r.gens.Confirm),
		}).Get(ctx, &res)
		if res.IntentID == "" {
			res.IntentID = paidWith(err)
		}
		if res.IntentID != "" {
			r.res.IntentID = res.IntentID
			return r.confirmIntent(ctx, &confirmed{state: res.State, err: err})
		}
		if again, err := r.createFailed(ctx, err); !again {
			return false, err
		}
	}
}

// paidWith is the intent a PayIntent error came from its confirm with; "" when it
// came from the creation.
func paidWith(err error) string {
	var appErr *temporal.ApplicationError
	var with activities.PaidWith
	if errors.As(err, &appErr) && appErr.HasDetails() && appErr.Details(&with) == nil {
		return with.IntentID
	}
	return ""
}

// intentInput asks for the order's intent with the key of the current generation.
func (r *run) intentInput() activities.IntentInput {
	key := order.PaymentKey(r.in.Order.WorkflowID, "intent", r.gens.Create)
	return activities.IntentInput{Step: r.step(key), Tenant: r.in.Order.Tenant, PaymentMethod: r.in.Order.PaymentMethod}
}

// createFailed acts on a creation's error: true to try again, with the same key
// or the next generation's; false when the order has ended or the error stands.
func (r *run) createFailed(ctx workflow.Context, err error) (bool, error) {
	switch errorType(err) {
	case activities.ErrPaymentRejected, activities.ErrCardDeclined:
		return false, r.end(ctx, order.StatusFailed, activities.EventOrderFailed, "payment refused: "+rootMessage(err))
	case activities.ErrProviderUnauthorized, activities.ErrPaymentInFlight:
		err := workflow.Sleep(ctx, sameKeyRetry)
		return err == nil, err
	case activities.ErrPaymentUnknown:
	default:
		return false, err
	}
	r.orphans = true
	if r.cancelRequested {
		return false, r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled before payment")
	}
	if err := workflow.Sleep(ctx, newKeyPause(r.gens.Create)); err != nil {
		return false, err
	}
	r.gens.Create++
	err = r.turn(ctx) // continuing as new is an error too
	return err == nil, err
}

// confirmIntent confirms the order's intent with the key of generation 0 and acts
// on what the intent shows: succeeded, paid; declined, PAYMENT_DECLINED;
// processing (or waiting on its customer), read again until it is not; never
// confirmed (its confirm's answer lost before it ran), confirmed again with the
// next generation's key, which cannot charge twice either.
// first, when set, is the answer of the confirm PayIntent already sent.
func (r *run) confirmIntent(ctx workflow.Context, first *confirmed) (bool, error) {
	for {
		r.res.Status = order.StatusPaymentPending
		key := order.PaymentKey(r.in.Order.WorkflowID, "confirm", r.gens.Confirm)
		st, err := r.sendConfirm(ctx, key, first)
		n, read := r.confirmAnswered(ctx, &st, err)
		if read {
			if st, err = r.awaitOutcome(ctx, key, st); err != nil {
				return false, err
			}
			n = r.intentShows(ctx, st)
		}
		if n.end {
			return n.paid, n.err
		}
		first = n.first
	}
}

// next is what confirmIntent does after a step: end (paid, or err), or go round
// again, confirming with the generation's key or acting on first.
type next struct {
	end   bool
	paid  bool
	err   error
	first *confirmed
}

func endWith(paid bool, err error) next { return next{end: true, paid: paid, err: err} }

func again(first *confirmed) next { return next{first: first} }

// sendConfirm confirms the intent with key, unless first holds the answer of the
// confirm already sent.
func (r *run) sendConfirm(ctx workflow.Context, key string, first *confirmed) (activities.IntentState, error) {
	if first != nil {
		return first.state, first.err
	}
	var st activities.IntentState
	err := workflow.ExecuteActivity(r.confirm, r.payments.ConfirmIntent, activities.ConfirmInput{
		Step: r.step(key), IntentID: r.res.IntentID,
	}).Get(ctx, &st)
	return st, err
}

// confirmAnswered acts on a confirm's error; read: the intent is to be read until
// it settles (st, processing when its answer is unknown).
func (r *run) confirmAnswered(ctx workflow.Context, st *activities.IntentState, err error) (n next, read bool) {
	switch kind := errorType(err); kind {
	case "":
		return next{}, true
	case activities.ErrCardDeclined:
		if r.v < 1 {
			return endWith(false, r.end(ctx, order.StatusPaymentDeclined, activities.EventOrderPaymentDeclined, "card declined")), false
		}
		closed, err := r.decline(ctx, "card declined")
		if err != nil {
			return endWith(false, err), false
		}
		return again(&confirmed{state: closed}), false
	case activities.ErrPaymentRejected:
		return endWith(false, r.end(ctx, order.StatusFailed, activities.EventOrderFailed, "charge refused: "+rootMessage(err))), false
	case activities.ErrProviderUnauthorized:
		if err := workflow.Sleep(ctx, sameKeyRetry); err != nil {
			return endWith(false, err), false
		}
		return again(nil), false
	case activities.ErrPaymentInFlight, activities.ErrPaymentUnknown:
		// Still running at the provider, or its answer lost for good: the
		// intent says what happened.
		if kind == activities.ErrPaymentUnknown {
			if err := r.move(ctx, order.StatusPaymentUnknown, ""); err != nil {
				return endWith(false, err), false
			}
		}
		st.Status = activities.IntentProcessing
		return next{}, true
	default:
		return endWith(false, err), false
	}
}

// intentShows acts on what the settled intent shows.
func (r *run) intentShows(ctx workflow.Context, st activities.IntentState) next {
	switch st.Status {
	case activities.IntentSucceeded:
		r.res.ChargeID = st.ChargeID
		return endWith(true, nil)
	case activities.IntentRequiresPaymentMethod:
		switch {
		case st.Declined == "":
		case r.v < 1 || r.declined != "": // closed already, or closing it failed to
			return endWith(false, r.end(ctx, order.StatusPaymentDeclined, activities.EventOrderPaymentDeclined, declineReason(st.Declined)))
		default:
			closed, err := r.decline(ctx, declineReason(st.Declined))
			if err != nil {
				return endWith(false, err)
			}
			return again(&confirmed{state: closed})
		}
	case activities.IntentCanceled: // nothing was charged: the intent cannot succeed any more
		if r.declined != "" {
			return endWith(false, r.end(ctx, order.StatusPaymentDeclined, activities.EventOrderPaymentDeclined, r.declined))
		}
		reason := r.abandoned
		if reason == "" {
			reason = "the payment intent was canceled at the provider"
		}
		return endWith(false, r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, reason))
	case activities.IntentRequiresConfirmation:
		return r.neverConfirmed(ctx)
	}
	return endWith(false, r.end(ctx, order.StatusFailed, activities.EventOrderFailed, "payment intent "+st.Status))
}

// neverConfirmed acts on an intent whose confirm never ran: closed if the order
// was cancelled, else confirmed again with the next generation's key.
func (r *run) neverConfirmed(ctx workflow.Context) next {
	if r.cancelRequested && r.v >= 1 && r.abandoned == "" {
		// Closed, so nothing confirms it later; one the customer paid
		// meanwhile is refunded as a cancel during the payment is.
		r.abandoned = "cancelled; the intent was never confirmed"
		closed, err := r.closeIntent(ctx)
		if err != nil {
			return endWith(false, err)
		}
		return again(&confirmed{state: closed})
	}
	if r.cancelRequested {
		return endWith(false, r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled; the intent was never confirmed"))
	}
	r.gens.Confirm++
	if err := r.turn(ctx); err != nil {
		return endWith(false, err)
	}
	return again(nil)
}

// confirmed is the answer of a confirm.
type confirmed struct {
	state activities.IntentState
	err   error
}

// waiting reports the intent statuses an order waits on: processing, and the
// customer's authentication.
func waiting(status string) bool {
	return status == activities.IntentProcessing || status == activities.IntentRequiresAction
}

// declineReason is the failure an order declined with decline code shows.
func declineReason(code string) string {
	if code == activities.AuthenticationFailed {
		return "card declined: the customer did not pass authentication"
	}
	return "card declined"
}

// maxWakes bounds the intent-changed signals a run acts on: each costs a read and
// a handful of history events, and past it the poll alone settles the wait.
const maxWakes = 20

// awaitOutcome waits until the intent leaves processing or requires_action and
// returns it as the provider holds it. A wait ends on whichever comes first: a read
// of the fallback poll (one activity whose attempts are the reads, at most
// IntentPoll apart, so nothing depends on webhooks); an intent-changed signal (a
// webhook: the intent is read at once); and, while the customer must authenticate,
// the action timeout or a cancel, which cancel the intent. A cancel the provider
// refuses because the customer authenticated meanwhile is answered by reading the
// intent: the order goes where the intent is, never where a timer guessed.
func (r *run) awaitOutcome(ctx workflow.Context, key string, st activities.IntentState) (activities.IntentState, error) {
	read := activities.RetrieveInput{OrderID: r.in.Order.ID, IntentID: r.res.IntentID, Key: key}
	wakes := workflow.GetSignalChannel(ctx, SignalIntentChanged)
	timerCtx, stopTimer := workflow.WithCancel(ctx)
	defer stopTimer()
	var deadline workflow.Future
	for waiting(st.Status) {
		if err := r.showWait(ctx, st); err != nil {
			return st, err
		}
		customer := st.Status == activities.IntentRequiresAction && r.abandoned == ""
		if customer && deadline == nil {
			deadline = workflow.NewTimer(timerCtx, r.actionTimeout())
		}
		pollCtx, stopPoll := workflow.WithCancel(ctx)
		poll := workflow.ExecuteActivity(r.pollOptions(pollCtx), r.payments.AwaitIntent, read)
		var next activities.IntentState
		var err error
		woke := false
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(poll, func(f workflow.Future) { err = f.Get(ctx, &next) })
		if r.wakes < maxWakes {
			sel.AddReceive(wakes, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); woke = true })
		}
		if customer {
			sel.AddFuture(deadline, func(workflow.Future) {
				r.abandoned = "abandoned: the customer did not authenticate within " + r.actionTimeout().String()
			})
			sel.AddReceive(r.cancels, func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, nil)
				r.abandoned = "cancelled before the customer authenticated"
			})
			if r.cancelRequested && r.abandoned == "" {
				r.abandoned = "cancelled before the customer authenticated"
			}
		}
		if !customer || r.abandoned == "" {
			sel.Select(ctx)
		}
		if !poll.IsReady() {
			stopPoll() // left behind: its next read is not needed
		}
		switch {
		case customer && r.abandoned != "":
			err = workflow.ExecuteActivity(r.intent, r.payments.AbandonIntent, activities.AbandonInput{
				RetrieveInput: read, CancelKey: order.PaymentKey(r.in.Order.WorkflowID, "abandon", 0),
			}).Get(ctx, &next)
		case woke:
			r.wakes++
			err = workflow.ExecuteActivity(r.lookup, r.payments.RetrieveIntent, read).Get(ctx, &next)
		}
		if err != nil {
			return st, err
		}
		st = next
	}
	return st, nil
}

// showWait records what the order waits on: its customer (PAYMENT_ACTION_REQUIRED,
// with the intent to send them to), or the provider again once they authenticated.
func (r *run) showWait(ctx workflow.Context, st activities.IntentState) error {
	switch {
	case st.Status == activities.IntentRequiresAction && r.res.Status != order.StatusActionRequired:
		return r.move(ctx, order.StatusActionRequired, r.res.IntentID)
	case st.Status == activities.IntentProcessing && r.res.Status == order.StatusActionRequired:
		return r.move(ctx, order.StatusPaymentPending, "")
	}
	return nil
}

// pollOptions are the fallback poll's: a read at once, then pauses doubling from
// sameKeyRetry up to the policy's IntentPoll.
func (r *run) pollOptions(ctx workflow.Context) workflow.Context {
	every := r.in.IntentPoll
	if every <= 0 {
		every = DefaultIntentPoll
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: min(sameKeyRetry, every), BackoffCoefficient: 2,
			MaximumInterval: every},
	})
}

// actionTimeout is how long the order waits on its customer, as the policy sets it.
func (r *run) actionTimeout() time.Duration {
	if r.in.ActionTimeout <= 0 {
		return DefaultActionTimeout
	}
	return r.in.ActionTimeout
}

// refundIntent refunds what the order's intent charged and is not refunded yet.
// A refund whose answer is lost, or that the provider refused (someone refunded
// part of the payment meanwhile), is followed by the next generation's key: the
// activity first reads the intent's refunds, so it finds ours if it happened and
// refunds only what is left otherwise.
func (r *run) refundIntent(ctx workflow.Context) (string, error) {
	for {
		key := order.PaymentKey(r.in.Order.WorkflowID, "refund", r.gens.Refund)
		var re activities.RefundResult
		err := workflow.ExecuteActivity(r.intent, r.payments.RefundIntent, activities.RefundIntentInput{
			Step: r.step(key), IntentID: r.res.IntentID,
		}).Get(ctx, &re)
		switch errorType(err) {
		case "":
			return re.RefundID, nil
		case activities.ErrProviderUnauthorized, activities.ErrPaymentInFlight:
		case activities.ErrPaymentRejected, activities.ErrCardDeclined:
			if r.gens.Refused++; r.gens.Refused == maxRefundRefusals {
				return "", err
			}
			r.gens.Refund++
		case activities.ErrPaymentUnknown:
			r.gens.Refund++
		default:
			return "", err
		}
		if err := workflow.Sleep(ctx, newKeyPause(r.gens.Refund)); err != nil {
			return "", err
		}
		if err := r.turn(ctx); err != nil {
			return "", err
		}
	}
}

// sweepOrphans cancels, once the order is settled, the intents that lost creation
// answers may have left: after the provider's search consistency window, since
// search is how they are found.
func (r *run) sweepOrphans(ctx workflow.Context) error {
	if !r.orphans {
		return nil
	}
	if err := workflow.Sleep(ctx, r.lookupDelay()); err != nil {
		return err
	}
	return workflow.ExecuteActivity(r.lookup, r.payments.CancelOrphanIntents, activities.SweepInput{
		WorkflowID: r.in.Order.WorkflowID, OrderID: r.in.Order.ID, Keep: r.res.IntentID,
	}).Get(ctx, nil)
}

// decline closes the intent of a declined order before the order says so: an
// intent left open takes another card through its client secret (Stripe.js's
// "try another card") and would charge an order that shows PAYMENT_DECLINED. The
// intent as the close left it is returned: canceled, the order ends declined;
// succeeded or processing, the customer paid meanwhile, and the order follows.
func (r *run) decline(ctx workflow.Context, reason string) (activities.IntentState, error) {
	r.declined = reason
	return r.closeIntent(ctx)
}

// closeIntent cancels the order's intent so that nothing can confirm it any more.
// The provider refuses to cancel an intent that succeeded or is processing; the
// intent, read by ID, is the answer then.
func (r *run) closeIntent(ctx workflow.Context) (activities.IntentState, error) {
	var st activities.IntentState
	err := workflow.ExecuteActivity(r.intent, r.payments.AbandonIntent, activities.AbandonInput{
		RetrieveInput: r.readIntent(),
		CancelKey:     order.PaymentKey(r.in.Order.WorkflowID, "close", 0),
	}).Get(ctx, &st)
	return st, err
}

// readIntent reads the order's intent and settles the current confirm key's
// ledger row by it.
func (r *run) readIntent() activities.RetrieveInput {
	return activities.RetrieveInput{OrderID: r.in.Order.ID, IntentID: r.res.IntentID,
		Key: order.PaymentKey(r.in.Order.WorkflowID, "confirm", r.gens.Confirm)}
}

// recoverPayment settles the payment of an order whose workflow closed before it
// did (terminated, timed out, gone): the reconciler starts this run with the
// intent the ledger names, and the intent decides. Succeeded, the order is paid;
// processing or waiting on its customer, it is waited on again with the same keys;
// declined, closed and declined; never confirmed, closed, and the order ends
// CANCELLED with nothing charged. With no intent, the payment never began.
func (r *run) recoverPayment(ctx workflow.Context) (bool, error) {
	if r.res.IntentID == "" {
		r.orphans = true // a creation whose answer was lost is swept
		return false, r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, "the workflow closed before the payment began")
	}
	var st activities.IntentState
	if err := workflow.ExecuteActivity(r.lookup, r.payments.RetrieveIntent, r.readIntent()).Get(ctx, &st); err != nil {
		return false, err
	}
	if st.Status == activities.IntentRequiresConfirmation || (st.Status == activities.IntentRequiresPaymentMethod && st.Declined == "") {
		r.abandoned = "the workflow closed before the payment was confirmed"
		var err error
		if st, err = r.closeIntent(ctx); err != nil {
			return false, err
		}
	}
	return r.confirmIntent(ctx, &confirmed{state: st})
}

// compensate undoes what an operator's cancel of the workflow (temporal workflow
// cancel) interrupted, in a context the cancel does not reach: the order's intent
// is closed, and refunded if it charged, and the order ends CANCELLED. A settled
// order stays as it is; one paid and still in its cancel window is refunded, as a
// cancel then would; one paid with no window left is fulfilled. The run still
// ends cancelled.
func (r *run) compensate(ctx workflow.Context, cause error) error {
	if r.res.Status.Terminal() || r.res.Fulfilled {
		return cause
	}
	r.ending = nil // an end the cancel cut short: the compensation decides
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	r.steps = newSteps(ctx)
	const reason = "the workflow was cancelled"
	if r.res.Status == order.StatusPaid {
		if r.in.CancelWindow > 0 && r.windowLeft(ctx, r.firstPaid) > 0 {
			return after(cause, r.refundAndEnd(ctx, order.StatusCancelled, activities.EventOrderCancelled, reason+" after payment"))
		}
		// Fulfilled as it was paid: the cancel may have cut its OrderPaid short,
		// which goes out again (the same event ID).
		r.res.Fulfilled = true
		return after(cause, r.publish(ctx, activities.EventOrderPaid, ""))
	}
	if r.res.IntentID == "" {
		// The payment's activity has ended (it is waited for): the ledger names the
		// intent it created, if any.
		if err := workflow.ExecuteActivity(r.lookup, r.payments.OrderIntent, r.in.Order.ID).Get(ctx, &r.res.IntentID); err != nil {
			return after(cause, err)
		}
	}
	if r.res.IntentID == "" {
		return after(cause, r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, reason+" before payment"))
	}
	st, err := r.closeIntent(ctx)
	for err == nil && waiting(st.Status) {
		err = workflow.ExecuteActivity(r.pollOptions(ctx), r.payments.AwaitIntent, r.readIntent()).Get(ctx, &st)
	}
	switch {
	case err != nil:
		return after(cause, err)
	case st.Status == activities.IntentSucceeded:
		r.res.ChargeID = st.ChargeID
		return after(cause, r.refundAndEnd(ctx, order.StatusCancelled, activities.EventOrderCancelled, reason+" during payment"))
	}
	return after(cause, r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, reason+" during payment"))
}

// after is the error a compensated run ends with: the compensation's, or else the
// cancel that caused it (so the run ends cancelled).
func after(cause, err error) error {
	if err != nil {
		return err
	}
	return cause
}
