// Package activities holds orderflow's side effects, as methods on structs that
// receive their dependencies: the order store (Postgres), the payment provider and
// the event publisher (Kafka). Every method is safe to run more than once.
package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
)

// ErrInvalidTransition is the Temporal error type of a status change that the
// order's current status forbids; retrying cannot fix it.
const ErrInvalidTransition = "InvalidTransition"

// Orders keeps the orders table, the read model of every order.
type Orders struct {
	pool  *pgxpool.Pool
	store *orderstore.Store
}

// NewOrders returns the order store activities.
func NewOrders(pool *pgxpool.Pool) *Orders {
	return &Orders{pool: pool, store: orderstore.New(pool)}
}

// RecordOrder inserts the order as PENDING; a second call is a no-op.
func (a *Orders) RecordOrder(ctx context.Context, o order.Order) error {
	return a.store.Insert(ctx, o)
}

// Transition moves an order to a new status.
type Transition struct {
	OrderID    string
	From       []order.Status
	To         order.Status
	PaymentRef string // kept when empty
	Failure    string // kept when empty
}

// Transition applies t only from one of t.From. Repeating an applied transition is a
// no-op; any other current status is a non-retryable InvalidTransition.
func (a *Orders) Transition(ctx context.Context, t Transition) error {
	from := make([]string, len(t.From))
	for i, s := range t.From {
		from[i] = string(s)
	}
	tag, err := a.pool.Exec(ctx, `
		UPDATE orders
		SET status = $2,
		    payment_ref = COALESCE(NULLIF($3, ''), payment_ref),
		    failure = COALESCE(NULLIF($4, ''), failure),
		    updated_at = now()
		WHERE id = $1 AND status = ANY($5)`,
		t.OrderID, t.To, t.PaymentRef, t.Failure, from)
	if err != nil {
		return fmt.Errorf("update order %s: %w", t.OrderID, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var current order.Status
	err = a.pool.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1`, t.OrderID).Scan(&current)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return temporal.NewNonRetryableApplicationError("order "+t.OrderID+" does not exist", ErrInvalidTransition, nil)
	case err != nil:
		return fmt.Errorf("read order %s: %w", t.OrderID, err)
	case current == t.To:
		return nil
	}
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("order %s: cannot go from %s to %s", t.OrderID, current, t.To), ErrInvalidTransition, nil)
}
