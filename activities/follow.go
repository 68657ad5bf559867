package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/refundstore"
)

// FollowInput names a paid order whose payment others may have refunded or
// disputed at the provider.
type FollowInput struct {
	OrderID  string
	Tenant   string `json:",omitempty"` // empty in runs started before refunds could fail later
	IntentID string
	Amount   int64
	Currency string
}

// FollowResult is the order as it follows its payment.
type FollowResult struct {
	Status   order.Status
	Refunded int64 // by others and by refund requests
	Changed  bool  // the order moved (or its refunded amount did)
	// Reversed are the refund requests whose refund the provider failed after it
	// succeeded (or while pending), ended FAILED by this run.
	Reversed []Reversal `json:",omitempty"`
}

// Reversal is a refund request ended FAILED because the provider failed its refund.
type Reversal struct {
	RefundID   string // the request's (rfd_...)
	WorkflowID string // the request's workflow
	Amount     int64  // what its refund was to give back
	Failure    string
}

// FollowPayment reads what the provider holds of the order's intent (its refunds
// and disputes, by consistent lists, never by an event's body) and moves the order
// there: PARTIALLY_REFUNDED or REFUNDED by what others refunded, DISPUTED while a
// dispute is open, REFUNDED once one is lost, PAID again once one is won. Others'
// refunds and lost disputes are recorded in the ledger, so it nets what the
// provider holds; refund requests' refunds count too, and their own keys' rows
// record them. A refund the provider failed after it succeeded counts for
// nothing: its ledger rows are reversed and its request ends FAILED (reversal),
// so its share is released and the order moves back. The order's own refunds
// are not others': they end the order CANCELLED or FAILED, and an order there is
// left alone.
func (a *Payments) FollowPayment(ctx context.Context, in FollowInput) (FollowResult, error) {
	refunds, err := a.provider.IntentRefunds(ctx, in.IntentID)
	if err != nil {
		return FollowResult{}, a.lookupFailed(err)
	}
	disputes, err := a.provider.IntentDisputes(ctx, in.IntentID)
	if err != nil {
		return FollowResult{}, a.lookupFailed(err)
	}
	reversed, err := a.reverseFailed(ctx, in, refunds)
	if err != nil {
		return FollowResult{}, err
	}
	refunded, err := a.refundedByOthers(ctx, in, refunds)
	if err != nil {
		return FollowResult{}, err
	}
	to := order.StatusPaid
	for _, d := range disputes {
		switch {
		case d.Open():
			to = order.StatusDisputed
		case d.Status == "lost" && refunded < in.Amount:
			// The bank took the money back: for the ledger, a refund by others.
			if err := a.ledger.RecordRefundByOthers(ctx, in.OrderID, in.IntentID, d.ID, in.Amount-refunded, in.Currency); err != nil {
				return FollowResult{}, err
			}
			refunded = in.Amount
		}
	}
	switch {
	case to == order.StatusDisputed:
	case refunded >= in.Amount:
		to, refunded = order.StatusRefunded, in.Amount
	case refunded > 0:
		to = order.StatusPartiallyRefunded
	}
	changed, err := a.orders.Follow(ctx, in.OrderID, to, refunded)
	if err != nil {
		return FollowResult{}, fmt.Errorf("follow the payment of %s: %w", in.OrderID, err)
	}
	return FollowResult{Status: to, Refunded: refunded, Changed: changed, Reversed: reversed}, nil
}

// refundedByOthers sums the refunds that give money back, but for the order's
// own, and records in the ledger those no refund request made.
func (a *Payments) refundedByOthers(ctx context.Context, in FollowInput, refunds []provider.Refund) (int64, error) {
	var refunded int64
	for _, re := range refunds {
		if !active(re) || re.Metadata[refundKeyField] != "" {
			continue
		}
		refunded += re.Amount
		if req := re.Metadata[refundRequestField]; req != "" {
			// The provider's word is final: a request released while its refund
			// was on its way (its run terminated, its row rebuilt) made it.
			if _, err := a.refunds.Settle(ctx, req, re.ID, re.Amount); err != nil {
				return 0, err
			}
			continue
		}
		if err := a.ledger.RecordRefundByOthers(ctx, in.OrderID, in.IntentID, re.ID, re.Amount, in.Currency); err != nil {
			return 0, err
		}
	}
	return refunded, nil
}

// reverseFailed acts on the intent's refunds that the provider failed or
// canceled: their ledger rows are reversed (they net nothing), and a refund
// request's ends FAILED with the provider's reason, its reservation released.
// It returns the requests it ended; those ended before are not returned again.
func (a *Payments) reverseFailed(ctx context.Context, in FollowInput, refunds []provider.Refund) ([]Reversal, error) {
	var out []Reversal
	for _, re := range refunds {
		if re.Status != "failed" && re.Status != "canceled" {
			continue
		}
		if _, err := a.ledger.Reverse(ctx, in.OrderID, re.ID); err != nil {
			return nil, err
		}
		req := re.Metadata[refundRequestField]
		if req == "" || in.Tenant == "" {
			continue
		}
		failure := "provider_" + re.Status + ": " + re.FailureReason
		row, changed, err := a.refunds.Reverse(ctx, in.Tenant, req, failure)
		switch {
		case errors.Is(err, refundstore.ErrNotFound):
			continue // its row is lost: the reconciler rebuilds it from the provider
		case err != nil:
			return nil, err
		case changed:
			a.m.Refunds.WithLabelValues(outcomeFailed).Inc()
			out = append(out, Reversal{RefundID: req, WorkflowID: row.WorkflowID, Amount: re.Amount, Failure: failure})
		}
	}
	return out, nil
}
