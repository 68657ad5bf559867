package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/orderflow/orderflow/activities"
	"github.com/orderflow/orderflow/internal/order"
)

// maxIntentPoll caps the pause between reads of an intent that is processing (or
// waits on its customer).
const maxIntentPoll = time.Minute

// maxNewKeyPause caps the pause before a new key after a saved 5xx, doubling from
// sameKeyRetry: a provider failing every request gets a new intent every few
// minutes, not every few seconds.
const maxNewKeyPause = 5 * time.Minute

// newKeyPause is the pause before the key of generation gen+1.
func (r *run) newKeyPause(gen int) time.Duration {
	if r.beforeBoundedHistory {
		return sameKeyRetry
	}
	return min(sameKeyRetry<<min(gen, 10), maxNewKeyPause)
}

// maxRefundRefusals bounds how often a refund refused by the provider is tried
// again with the next key (someone may have refunded part of it meanwhile).
const maxRefundRefusals = 3

// payByIntent pays the order with one PaymentIntent: created, recorded in the
// ledger, then confirmed. An intent succeeds at most once, so no timing, retry or
// lost answer can take the money twice, and every unknown outcome of the confirm
// is settled by reading the intent by ID: never by search, never by guessing. It
// returns true once paid; otherwise it has ended the order.
func (r *run) payByIntent(ctx workflow.Context) (bool, error) {
	if r.res.IntentID == "" { // a resumed run may have it
		r.res.Status = order.StatusPaymentPending
		intentID, err := r.createIntent(ctx)
		if intentID == "" {
			return false, err
		}
		r.res.IntentID = intentID
	}
	return r.confirmIntent(ctx)
}

// createIntent creates the order's intent with the key of generation 0. Only when
// a creation's answer is lost for good (a saved 5xx) does the next generation's
// key create another: the first, if it exists, was never recorded, so it is never
// confirmed and moves no money; sweepOrphans cancels it. Refused credentials and a
// key in use are waited out by the activity's retry policy (by this loop in runs
// before changeBoundedHistory).
func (r *run) createIntent(ctx workflow.Context) (string, error) {
	for {
		key := order.PaymentKey(r.in.Order.WorkflowID, "intent", r.gens.Create)
		var res activities.IntentResult
		err := workflow.ExecuteActivity(r.intent, r.payments.CreateIntent, activities.IntentInput{
			Step: r.step(key), Tenant: r.in.Order.Tenant, PaymentMethod: r.in.Order.PaymentMethod,
		}).Get(ctx, &res)
		switch errorType(err) {
		case "":
			return res.IntentID, nil
		case activities.ErrPaymentRejected, activities.ErrCardDeclined:
			return "", r.end(ctx, order.StatusFailed, activities.EventOrderFailed, "payment refused: "+rootMessage(err))
		case activities.ErrProviderUnauthorized, activities.ErrPaymentInFlight:
			if err := workflow.Sleep(ctx, sameKeyRetry); err != nil {
				return "", err
			}
			continue
		case activities.ErrPaymentUnknown:
		default:
			return "", err
		}
		r.orphans = true
		if r.cancelRequested {
			return "", r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled before payment")
		}
		if err := workflow.Sleep(ctx, r.newKeyPause(r.gens.Create)); err != nil {
			return "", err
		}
		r.gens.Create++
		if err := r.turn(ctx); err != nil {
			return "", err
		}
	}
}

// confirmIntent confirms the order's intent with the key of generation 0 and acts
// on what the intent shows: succeeded, paid; declined, PAYMENT_DECLINED;
// processing (or waiting on its customer), read again until it is not; never
// confirmed (its confirm's answer lost before it ran), confirmed again with the
// next generation's key, which cannot charge twice either.
func (r *run) confirmIntent(ctx workflow.Context) (bool, error) {
	for {
		r.res.Status = order.StatusPaymentPending
		key := order.PaymentKey(r.in.Order.WorkflowID, "confirm", r.gens.Confirm)
		var st activities.IntentState
		err := workflow.ExecuteActivity(r.confirm, r.payments.ConfirmIntent, activities.ConfirmInput{
			Step: r.step(key), IntentID: r.res.IntentID,
		}).Get(ctx, &st)
		switch kind := errorType(err); kind {
		case "":
		case activities.ErrCardDeclined:
			return false, r.end(ctx, order.StatusPaymentDeclined, activities.EventOrderPaymentDeclined, "card declined")
		case activities.ErrPaymentRejected:
			return false, r.end(ctx, order.StatusFailed, activities.EventOrderFailed, "charge refused: "+rootMessage(err))
		case activities.ErrProviderUnauthorized:
			if err := workflow.Sleep(ctx, sameKeyRetry); err != nil {
				return false, err
			}
			continue
		case activities.ErrPaymentInFlight, activities.ErrPaymentUnknown:
			// Still running at the provider, or its answer lost for good: the
			// intent says what happened.
			if kind == activities.ErrPaymentUnknown {
				if err := r.move(ctx, order.StatusPaymentUnknown, ""); err != nil {
					return false, err
				}
			}
			st.Status = activities.IntentProcessing
		default:
			return false, err
		}
		if st, err = r.awaitIntent(ctx, key, st); err != nil {
			return false, err
		}
		switch st.Status {
		case activities.IntentSucceeded:
			r.res.ChargeID = st.ChargeID
			return true, nil
		case activities.IntentRequiresPaymentMethod:
			if st.Declined != "" {
				return false, r.end(ctx, order.StatusPaymentDeclined, activities.EventOrderPaymentDeclined, "card declined")
			}
		case activities.IntentRequiresConfirmation:
			if r.cancelRequested {
				return false, r.end(ctx, order.StatusCancelled, activities.EventOrderCancelled, "cancelled; the intent was never confirmed")
			}
			r.gens.Confirm++
			if err := r.turn(ctx); err != nil {
				return false, err
			}
			continue
		}
		return false, r.end(ctx, order.StatusFailed, activities.EventOrderFailed, "payment intent "+st.Status)
	}
}

// awaitIntent reads the intent while it is processing or waits on its customer,
// pausing before each read, from sameKeyRetry doubling up to maxIntentPoll: one
// activity whose attempts are the reads (workflow timers in runs before
// changeBoundedHistory).
func (r *run) awaitIntent(ctx workflow.Context, key string, st activities.IntentState) (activities.IntentState, error) {
	pending := st.Status == activities.IntentProcessing || st.Status == activities.IntentRequiresAction
	if r.poll != nil && pending {
		err := workflow.ExecuteActivity(r.poll, r.payments.AwaitIntent, activities.RetrieveInput{
			OrderID: r.in.Order.ID, IntentID: r.res.IntentID, Key: key,
		}).Get(ctx, &st)
		return st, err
	}
	for pause := sameKeyRetry; st.Status == activities.IntentProcessing || st.Status == activities.IntentRequiresAction; pause = min(2*pause, maxIntentPoll) {
		if err := workflow.Sleep(ctx, pause); err != nil {
			return st, err
		}
		err := workflow.ExecuteActivity(r.lookup, r.payments.RetrieveIntent, activities.RetrieveInput{
			OrderID: r.in.Order.ID, IntentID: r.res.IntentID, Key: key,
		}).Get(ctx, &st)
		if err != nil {
			return st, err
		}
	}
	return st, nil
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
		if err := workflow.Sleep(ctx, r.newKeyPause(r.gens.Refund)); err != nil {
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
