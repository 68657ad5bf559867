// Package activities holds orderflow's side effects, as methods on structs that
// receive their dependencies: the order store (Postgres), the payment provider and
// the event publisher (Kafka). Every method is safe to run more than once.
package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
)

// ErrInvalidTransition is the Temporal error type of a status change that the
// order's current status forbids; retrying cannot fix it.
const ErrInvalidTransition = "InvalidTransition"

// Orders keeps the orders table, the read model of every order.
type Orders struct {
	store *orderstore.Store
}

// NewOrders returns the order store activities.
func NewOrders(pool *pgxpool.Pool) *Orders {
	return &Orders{store: orderstore.New(pool)}
}

// RecordOrder inserts the order as PENDING; a second call is a no-op.
func (a *Orders) RecordOrder(ctx context.Context, o order.Order) error {
	return a.store.Insert(ctx, o)
}

// Transition moves an order to a new status. (Histories recorded before the state
// machine moved to the order domain also carry a From list; it is ignored.)
type Transition struct {
	OrderID    string
	To         order.Status
	PaymentRef string // kept when empty
	Failure    string // kept when empty
}

// Transition applies t if the order's state machine allows it from the current
// status. Repeating an applied transition is a no-op; a forbidden one is a
// non-retryable InvalidTransition.
func (a *Orders) Transition(ctx context.Context, t Transition) error {
	return asActivityError(a.store.Move(ctx, t.OrderID, t.To, t.PaymentRef, t.Failure))
}

// MarkPaid moves the order to PAID like Transition and returns when it was first
// recorded PAID: a run that pays again an order paid before (a reset, a recovery)
// finds that time, and anchors the cancel window to it.
//
// An order paid before and moved since by others (PARTIALLY_REFUNDED, REFUNDED,
// DISPUTED: the provider's refunds and disputes, which the order follows) is
// paid still: a run that pays it again finds its payment and leaves its status
// as it is, never refunding the rest as if PAID were forbidden.
func (a *Orders) MarkPaid(ctx context.Context, t Transition) (time.Time, error) {
	err := asActivityError(a.store.MarkPaid(ctx, t.OrderID, t.PaymentRef))
	if err != nil && !a.paidAndFollowed(ctx, t.OrderID) {
		return time.Time{}, err
	}
	at, err := a.store.PaidAt(ctx, t.OrderID)
	switch {
	case err != nil:
		return time.Time{}, err
	case at == nil:
		return time.Time{}, fmt.Errorf("order %s is PAID with no time of payment", t.OrderID)
	}
	return *at, nil
}

// paidAndFollowed reports an order that was paid and has followed its payment
// since: a status after the payment other than PAID.
func (a *Orders) paidAndFollowed(ctx context.Context, orderID string) bool {
	st, err := a.store.Standings(ctx, []string{orderID})
	s, ok := st[orderID]
	return err == nil && ok && s.Status != order.StatusPaid && order.AfterPayment(s.Status)
}

// PaidAt returns when the order was first recorded PAID; nil if it never was.
func (a *Orders) PaidAt(ctx context.Context, orderID string) (*time.Time, error) {
	return a.store.PaidAt(ctx, orderID)
}

// asActivityError makes a forbidden transition final for Temporal's retries.
func asActivityError(err error) error {
	if errors.Is(err, orderstore.ErrInvalidTransition) {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrInvalidTransition, nil)
	}
	return err
}
