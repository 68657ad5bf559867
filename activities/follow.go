package activities

import (
	"context"
	"fmt"

	"github.com/orderflow/orderflow/internal/order"
)

// FollowInput names a paid order whose payment others may have refunded or
// disputed at the provider.
type FollowInput struct {
	OrderID  string
	IntentID string
	Amount   int64
	Currency string
}

// FollowResult is the order as it follows its payment.
type FollowResult struct {
	Status   order.Status
	Refunded int64 // by others and by refund requests
	Changed  bool  // the order moved (or its refunded amount did)
}

// FollowPayment reads what the provider holds of the order's intent (its refunds
// and disputes, by consistent lists, never by an event's body) and moves the order
// there: PARTIALLY_REFUNDED or REFUNDED by what others refunded, DISPUTED while a
// dispute is open, REFUNDED once one is lost, PAID again once one is won. Others'
// refunds and lost disputes are recorded in the ledger, so it nets what the
// provider holds; refund requests' refunds count too, and their own keys' rows
// record them. The order's own refunds are not others': they end the order
// CANCELLED or FAILED, and an order there is left alone.
func (a *Payments) FollowPayment(ctx context.Context, in FollowInput) (FollowResult, error) {
	refunds, err := a.provider.IntentRefunds(ctx, in.IntentID)
	if err != nil {
		return FollowResult{}, a.lookupFailed(err)
	}
	disputes, err := a.provider.IntentDisputes(ctx, in.IntentID)
	if err != nil {
		return FollowResult{}, a.lookupFailed(err)
	}
	var refunded int64
	for _, re := range refunds {
		if (re.Status != "succeeded" && re.Status != "pending") || re.Metadata[refundKeyField] != "" {
			continue
		}
		refunded += re.Amount
		if re.Metadata[refundRequestField] != "" {
			continue
		}
		if err := a.ledger.RecordRefundByOthers(ctx, in.OrderID, in.IntentID, re.ID, re.Amount, in.Currency); err != nil {
			return FollowResult{}, err
		}
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
	return FollowResult{Status: to, Refunded: refunded, Changed: changed}, nil
}
