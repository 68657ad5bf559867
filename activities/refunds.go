package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
)

// refundRequestField is the refund metadata that marks a refund request's refund
// at the provider, with the request's ID: the provider does not show keys, and
// the request's row explains the refund.
const refundRequestField = "orderflow_refund_request"

// refundWorkflowField names the request's workflow beside it, so a request's row
// lost with a database's tail is rebuilt from the provider's refund.
const refundWorkflowField = "orderflow_refund_workflow"

// The failures of a refund request that the workflow's rules decide; the
// provider's refusals carry the provider's code instead.
const (
	FailureNotRefundable = "order_not_refundable"
	FailureExceeds       = "amount_exceeds_refundable"
)

// ErrRefundNotReserved is the error type of a send of a refund that holds no
// reservation: the workflow reserves first, so it is a bug, never retried.
const ErrRefundNotReserved = "RefundNotReserved"

// Reservation is a refund request's share of its order's charge, as ReserveRefund
// left it.
type Reservation struct {
	// Status: PENDING, reserved and to be sent; SUCCEEDED, refunded already (a
	// reset, a retry); FAILED, nothing is refunded, for Failure.
	Status           refund.Status
	Amount           int64
	ProviderRefundID string
	Failure          string
	// Order is the order the refund is of (ID, tenant, workflow ID, amount,
	// currency), as its FollowPayment needs it; zero when there is no such order.
	Order    order.Order
	IntentID string // the order's PaymentIntent
}

// RecordRefund records the refund request PENDING unless it is recorded: the
// refund workflow's first step, so a refund an event started is readable at once.
func (a *Payments) RecordRefund(ctx context.Context, r refund.Refund) error {
	if _, err := a.refunds.Record(ctx, r); err != nil {
		return fmt.Errorf("record refund %s: %w", r.ID, err)
	}
	return nil
}

// ReserveRefund reserves the refund's amount out of what is left of its order's
// charge, or ends the refund FAILED: the order must be the tenant's, PAID or
// PARTIALLY_REFUNDED, and the amount (0: all that is left) at most what is left.
// What is left is weighed under the order's refund lock, so refunds of one order
// arriving at once on any number of workers never reserve more than was charged:
// the charge, less the provider's refunds that no request's reservation explains
// (read first, a consistent list), less the other requests' reservations. A
// refund reserved or ended before is returned as it stands.
func (a *Payments) ReserveRefund(ctx context.Context, r refund.Refund) (Reservation, error) {
	row, err := a.refunds.Get(ctx, r.Tenant, r.ID)
	if errors.Is(err, refundstore.ErrNotFound) {
		// The first step recorded it, and a restore or a failover lost it: the
		// run's own input records it again, and the provider is asked below.
		row, err = a.refunds.Record(ctx, r)
	}
	if err != nil {
		return Reservation{}, fmt.Errorf("read refund %s: %w", r.ID, err) // retried
	}
	reserved := row.Status != refund.StatusPending || row.Amount > 0 // or ended
	o, err := a.orders.Get(ctx, r.Tenant, r.OrderID)
	switch {
	case errors.Is(err, orderstore.ErrNotFound) && reserved:
		return reservationOf(row, Reservation{}), nil
	case errors.Is(err, orderstore.ErrNotFound):
		return a.refuse(ctx, a.refunds, r.ID, Reservation{}, FailureNotRefundable+": no such order")
	case err != nil:
		return Reservation{}, fmt.Errorf("read the order of refund %s: %w", r.ID, err)
	}
	res := Reservation{Order: order.Order{ID: o.ID, Tenant: r.Tenant, WorkflowID: o.WorkflowID, Amount: o.Amount, Currency: o.Currency}}
	if res.IntentID, err = a.ledger.IntentOfOrder(ctx, o.ID); err != nil {
		return Reservation{}, err
	}
	switch {
	case reserved:
		return reservationOf(row, res), nil
	case res.IntentID == "":
		return a.refuse(ctx, a.refunds, r.ID, res, FailureNotRefundable+": the order was not paid through a payment intent")
	}
	refunds, err := a.provider.IntentRefunds(ctx, res.IntentID)
	if err != nil {
		return Reservation{}, a.lookupFailed(err)
	}
	if re, ok := requestRefund(refunds, r.ID); ok {
		// Made before (its row lost with a database's tail): the provider's word,
		// whatever the order has become since.
		return a.settleRefund(ctx, r.ID, res, re)
	}
	if !refundable(o.Status) {
		return a.refuse(ctx, a.refunds, r.ID, res, FailureNotRefundable+": the order is "+string(o.Status))
	}
	err = a.refunds.LockOrder(ctx, o.ID, func(tx pgx.Tx) error {
		res, err = a.reserveLocked(ctx, tx, r, refunds, res)
		return err
	})
	return res, err
}

// reserveLocked weighs the refund against its order's charge and reserves it, or
// ends it FAILED, in tx, which holds the order's refund lock.
func (a *Payments) reserveLocked(ctx context.Context, tx pgx.Tx, r refund.Refund, atProvider []provider.Refund, res Reservation) (Reservation, error) {
	refunds := refundstore.On(tx)
	row, err := refunds.Get(ctx, r.Tenant, r.ID)
	switch {
	case err != nil:
		return res, err
	case row.Status != refund.StatusPending || row.Amount > 0:
		return reservationOf(row, res), nil // another attempt got here first
	}
	o, err := orderstore.New(tx).Get(ctx, r.Tenant, r.OrderID)
	switch {
	case err != nil:
		return res, fmt.Errorf("read the order of refund %s: %w", r.ID, err)
	case !refundable(o.Status):
		return a.refuse(ctx, refunds, r.ID, res, FailureNotRefundable+": the order is "+string(o.Status))
	}
	// The ledger first: a request's ledger row and its key on the refunds row are
	// written in one transaction, so a row seen here has its key seen below.
	keys, err := ledger.On(tx).RefundKeys(ctx, o.ID)
	if err != nil {
		return res, err
	}
	reserved, err := refunds.Reserved(ctx, r.Tenant, o.ID)
	if err != nil {
		return res, err
	}
	if ownRefund(keys, reserved) {
		return a.refuse(ctx, refunds, r.ID, res, FailureNotRefundable+": the order is being refunded in full")
	}
	left := leftToRefund(o.Amount, atProvider, reserved, r.ID)
	amount := row.AmountRequested
	if amount == 0 {
		amount = left
	}
	if amount <= 0 || amount > left {
		return a.refuse(ctx, refunds, r.ID, res, fmt.Sprintf("%s: %d left", FailureExceeds, max(left, 0)))
	}
	if err := refunds.Reserve(ctx, r.ID, amount, o.Currency); err != nil {
		return res, err
	}
	res.Status, res.Amount = refund.StatusPending, amount
	return res, nil
}

// refundable reports the statuses of an order whose charge a refund request may
// give back.
func refundable(s order.Status) bool {
	return s == order.StatusPaid || s == order.StatusPartiallyRefunded
}

// active reports the provider's refunds that give money back: made, or on their way.
func active(re provider.Refund) bool { return re.Status == "succeeded" || re.Status == "pending" }

// landed is what the provider shows of each refund request's refunds, by the
// request's ID: true when one of them gives money back, false when all of them
// ended without money moving (failed or canceled, even after they succeeded).
// A request that is not a key of it has nothing at the provider yet.
func landed(refunds []provider.Refund) map[string]bool {
	out := map[string]bool{}
	for _, re := range refunds {
		if req := re.Metadata[refundRequestField]; req != "" {
			out[req] = out[req] || active(re)
		}
	}
	return out
}

// holding reports whether a request's row still holds part of its order's
// charge, as the provider shows it: reserved and not ended, unless the provider
// shows that its refund failed (the row is settled FAILED by the follow).
func holding(r refundstore.Row, atProvider map[string]bool) bool {
	moved, seen := atProvider[r.ID]
	return r.Holds() && (moved || !seen)
}

// leftToRefund is what is left of a charge of amount for the refund request self:
// less each refund at the provider that no reservation explains (the order's
// cancel's, a dashboard's, a request's whose row holds nothing), less every other
// request's reservation that may still become money, whether or not the provider
// shows it yet. A reservation whose refund the provider failed counts for nothing.
func leftToRefund(amount int64, atProvider []provider.Refund, reserved []refundstore.Row, self string) int64 {
	left := amount
	states := landed(atProvider)
	holds := map[string]bool{self: true}
	for _, r := range reserved {
		if r.ID != self && holding(r, states) {
			left -= r.Amount
			holds[r.ID] = true
		}
	}
	for _, re := range atProvider {
		if active(re) && !holds[re.Metadata[refundRequestField]] {
			left -= re.Amount
		}
	}
	return left
}

// ownRefund reports whether one of the ledger's open refund keys of an order is
// none of its requests': the order's own refund (its cancel's, its failure's),
// which gives back all that is left.
func ownRefund(keys []string, reserved []refundstore.Row) bool {
	for _, k := range keys {
		if !slices.ContainsFunc(reserved, func(r refundstore.Row) bool { return r.Key == k }) {
			return true
		}
	}
	return false
}

// requestRefund finds the refund request id's refund among an intent's refunds.
func requestRefund(refunds []provider.Refund, id string) (provider.Refund, bool) {
	for _, re := range refunds {
		if active(re) && re.Metadata[refundRequestField] == id {
			return re, true
		}
	}
	return provider.Refund{}, false
}

// reservationOf is res as the refund's row stands.
func reservationOf(row refundstore.Row, res Reservation) Reservation {
	res.Status, res.Amount, res.ProviderRefundID, res.Failure = row.Status, row.Amount, row.ProviderRefundID, row.Failure
	return res
}

// refuse ends the refund FAILED for failure, on store (the pool's, or the locked
// transaction's).
func (a *Payments) refuse(ctx context.Context, store *refundstore.Store, id string, res Reservation, failure string) (Reservation, error) {
	ended, err := store.Fail(ctx, id, failure)
	if err != nil {
		return res, err
	}
	if ended {
		a.m.Refunds.WithLabelValues(outcomeFailed).Inc()
	}
	res.Status, res.Failure = refund.StatusFailed, failure
	return res, nil
}

// settleRefund records the refund SUCCEEDED as the provider shows it.
func (a *Payments) settleRefund(ctx context.Context, id string, res Reservation, re provider.Refund) (Reservation, error) {
	ended, err := a.refunds.Settle(ctx, id, re.ID, re.Amount)
	if err != nil {
		return res, err
	}
	if ended {
		a.m.Refunds.WithLabelValues(outcomeSucceeded).Inc()
	}
	res.Status, res.Amount, res.ProviderRefundID, res.Failure = refund.StatusSucceeded, re.Amount, re.ID, ""
	return res, nil
}

// SendInput asks to send a reserved refund to the provider with the key of
// generation Gen.
type SendInput struct {
	Refund   refund.Refund
	IntentID string
	Currency string
	Gen      int
}

// SendKey is the provider key of a refund request's generation gen: derived from
// its workflow ID, never its run, so a retry or a reset sends the same one.
func SendKey(refundWorkflowID string, gen int) string {
	return order.PaymentKey(refundWorkflowID, "refund", gen)
}

// SendRefund sends the refund's reservation to the provider with the key of
// in.Gen, opening its ledger row (and noting the key on the refund's row) first,
// so the ledger nets what the provider holds. A refund that ended, or whose key
// the ledger holds as succeeded, is not sent again: a reset sends nothing new. A
// refusal ends it FAILED with the provider's code, its reservation released; an
// unknown outcome is settled by the intent's refunds (a consistent list): found,
// it succeeded; not found after a saved 5xx, the key did nothing, and the error
// (ErrPaymentUnknown) tells the workflow to send the next generation's.
func (a *Payments) SendRefund(ctx context.Context, in SendInput) (Reservation, error) {
	r := in.Refund
	row, err := a.refunds.Get(ctx, r.Tenant, r.ID)
	if errors.Is(err, refundstore.ErrNotFound) {
		// Its row and reservation were lost with a database's tail: recorded
		// again from the run's input and weighed again, the provider's refunds
		// first, so one made before the loss is found, never made twice.
		res, rerr := a.ReserveRefund(ctx, r)
		if rerr != nil || res.Status != refund.StatusPending {
			return res, rerr
		}
		row, err = a.refunds.Get(ctx, r.Tenant, r.ID)
	}
	switch {
	case err != nil:
		return Reservation{}, fmt.Errorf("read refund %s: %w", r.ID, err)
	case row.Status != refund.StatusPending:
		return reservationOf(row, Reservation{}), nil
	case row.Amount == 0:
		return Reservation{}, temporal.NewNonRetryableApplicationError("refund "+r.ID+" is not reserved", ErrRefundNotReserved, nil)
	}
	key := SendKey(r.WorkflowID, in.Gen)
	p := ledger.Payment{Key: key, Kind: ledger.Refund, OrderID: r.OrderID, Amount: row.Amount, Currency: in.Currency, IntentID: in.IntentID}
	e, err := a.ledger.Open(ctx, p, func(tx pgx.Tx) error { return refundstore.On(tx).SetKey(ctx, r.ID, key) })
	if err != nil {
		return Reservation{}, err
	}
	if e.Status == ledger.Succeeded && e.ProviderID != "" {
		return a.settleRefund(ctx, r.ID, Reservation{}, provider.Refund{ID: e.ProviderID, Amount: e.Amount})
	}
	stop := Heartbeat(ctx)
	re, err := a.provider.RefundIntent(ctx, key, in.IntentID, e.Amount,
		map[string]string{"order_id": r.OrderID, refundRequestField: r.ID, refundWorkflowField: r.WorkflowID})
	stop()
	if err != nil {
		return a.sendFailed(ctx, in, key, err)
	}
	if err := a.ledger.Settle(ctx, key, ledger.Succeeded, re.ID); err != nil {
		return Reservation{}, err
	}
	return a.settleRefund(ctx, r.ID, Reservation{}, re)
}

// sendFailed acts on a refund the provider did not answer with success. Refused
// credentials and a key in use are sent again with the same key. Any other answer
// may hide a refund that was made (a lost answer, a saved 5xx after it ran, ours
// refused as one too many), so the intent's refunds are read first.
func (a *Payments) sendFailed(ctx context.Context, in SendInput, key string, err error) (Reservation, error) {
	v := classify(err)
	if v.errType == ErrProviderUnauthorized || v.errType == ErrPaymentInFlight {
		return Reservation{}, a.failed(ctx, key, err)
	}
	refunds, lerr := a.provider.IntentRefunds(ctx, in.IntentID)
	if lerr != nil {
		return Reservation{}, a.lookupFailed(lerr)
	}
	if re, ok := requestRefund(refunds, in.Refund.ID); ok {
		if err := a.ledger.Settle(ctx, key, ledger.Succeeded, re.ID); err != nil {
			return Reservation{}, err
		}
		return a.settleRefund(ctx, in.Refund.ID, Reservation{}, re)
	}
	switch v.errType {
	case "":
		return Reservation{}, fmt.Errorf("refund %s: %w", key, err) // not made yet: the same key again
	case ErrPaymentUnknown:
		// The key's saved answer replays for good, and it made nothing.
		a.m.Unknown.Inc()
		if err := a.ledger.Settle(ctx, key, ledger.Absent, ""); err != nil {
			return Reservation{}, err
		}
		return Reservation{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrPaymentUnknown, nil)
	}
	if err := a.ledger.Settle(ctx, key, v.status, ""); err != nil {
		return Reservation{}, err
	}
	return a.refuse(ctx, a.refunds, in.Refund.ID, Reservation{}, refusal(err))
}

// refusal is the failure of a refund the provider refused: its code, then its
// (scrubbed) message.
func refusal(err error) string {
	var perr *provider.Error
	if !errors.As(err, &perr) {
		return err.Error()
	}
	code := perr.Code
	if code == "" {
		code = "provider_refused"
	}
	return code + ": " + perr.Message
}
