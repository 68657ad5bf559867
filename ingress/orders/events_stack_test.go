//go:build stack

package orders_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/orders"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/worker/workertest"
	"github.com/orderflow/orderflow/workflows"
)

// Two deliveries of one eventId with different bodies, handled at once, 200 times:
// one makes the order, the other is a mismatch, and the event's row holds the body
// of the one that made it, whichever delivery wrote the row.
func TestConcurrentDeliveriesRecordTheBodyThatMadeTheOrder(t *testing.T) {
	h := workertest.NewOrders(t)
	group, prefix := "g-"+h.Queue, h.Queue+"-evt-"
	in := h.ConsumerIntake(group)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const pairs = 200
	body := func(customer string) orders.Request {
		return orders.Request{CustomerID: customer, Currency: "usd", PaymentMethod: "pm_card_visa",
			Items: []order.Item{{SKU: "sku-1", Quantity: 1, UnitAmount: 1000}}}
	}
	results := make([][2]intake.Result, pairs)
	retried := make([][2]bool, pairs)
	var wg sync.WaitGroup
	for i := range pairs {
		for j, customer := range []string{"cus_a", "cus_b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A dependency that failed (a busy machine's Temporal) is
				// Unavailable, and the consumer delivers the event again.
				for {
					results[i][j] = in.SubmitEvent(ctx, h.OrderKind(), "acme", fmt.Sprint(prefix, i), body(customer))
					if results[i][j].Kind != intake.Unavailable || ctx.Err() != nil {
						return
					}
					retried[i][j] = true
					time.Sleep(100 * time.Millisecond)
				}
			}()
		}
	}
	wg.Wait()

	wrong := 0
	for i, pair := range results {
		var maker orders.Request
		// A delivery delivered again after it started the workflow finds its own order.
		made := func(j int) bool {
			return pair[j].Kind == intake.Created || retried[i][j] && pair[j].Kind == intake.Replayed
		}
		switch {
		case made(0) && pair[1].Kind == intake.Mismatch:
			maker = body("cus_a")
		case made(1) && pair[0].Kind == intake.Mismatch:
			maker = body("cus_b")
		default:
			t.Fatalf("event %d: results %v and %v, want one Created and one Mismatch", i, pair[0].Kind, pair[1].Kind)
		}
		var stored []byte
		if err := h.Pool.QueryRow(ctx, `SELECT fingerprint FROM processed_events WHERE consumer_group = $1 AND tenant = 'acme' AND event_id = $2`,
			group, fmt.Sprint(prefix, i)).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stored, orders.Fingerprint(maker)) {
			wrong++
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d rows hold the body that did not make the order", wrong, pairs)
	}
}

// A delivery that started the workflow and died before writing the event's row,
// then another delivery of the eventId with another body: the second is a
// mismatch, and the row it writes holds the first body, the order's.
func TestRowAfterACrashHoldsTheBodyThatMadeTheOrder(t *testing.T) {
	h := workertest.NewOrders(t)
	group, eventID := "g-"+h.Queue, h.Queue+"-evt"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := orders.Request{CustomerID: "cus_a", Currency: "usd", PaymentMethod: "pm_card_visa",
		Items: []order.Item{{SKU: "sku-1", Quantity: 1, UnitAmount: 1000}}}
	second := first
	second.CustomerID = "cus_b"

	started := orders.NewTemporal(h.Starter(), workflows.Policy{})
	if created, err := started.StartNew(ctx, first.Order("acme", order.WorkflowID("acme", order.FromEvent, eventID))); err != nil || !created {
		t.Fatalf("first delivery's start: %v, %v", created, err)
	}
	// ...and its process died here, before the row.
	if out := h.ConsumerIntake(group).SubmitEvent(ctx, h.OrderKind(), "acme", eventID, second); out.Kind != intake.Mismatch {
		t.Fatalf("second delivery with another body: %v, want Mismatch", out.Kind)
	}
	var stored []byte
	if err := h.Pool.QueryRow(ctx, `SELECT fingerprint FROM processed_events WHERE consumer_group = $1 AND tenant = 'acme' AND event_id = $2`,
		group, eventID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, orders.Fingerprint(first)) {
		t.Fatal("the row holds the second body, which did not make the order")
	}
	// The first delivery, redelivered, is the order's.
	if out := h.ConsumerIntake(group).SubmitEvent(ctx, h.OrderKind(), "acme", eventID, first); out.Kind != intake.Replayed {
		t.Fatalf("the first body redelivered: %v, want Replayed", out.Kind)
	}
}
