package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/sandbox"
)

var orderMeta = map[string]string{"order_id": "ord_1", "tenant": "acme"}

// An intent succeeds at most once: a second confirm, under any key, is refused,
// and only one charge exists.
func TestIntentSucceedsAtMostOnce(t *testing.T) {
	sim, c := newSandbox(t)
	ctx := context.Background()
	in, err := c.CreateIntent(ctx, "create-1", 1299, "USD", "pm_card_visa", orderMeta)
	if err != nil || in.Status != "requires_confirmation" {
		t.Fatalf("create = %+v, %v", in, err)
	}
	again, err := c.CreateIntent(ctx, "create-1", 1299, "USD", "pm_card_visa", orderMeta)
	if err != nil || again.ID != in.ID {
		t.Fatalf("create replayed %+v, %v; want %s", again, err, in.ID)
	}
	paid, err := c.ConfirmIntent(ctx, "confirm-1", in.ID)
	if err != nil || paid.Status != "succeeded" || paid.Charge == "" || paid.Received != 1299 {
		t.Fatalf("confirm = %+v, %v", paid, err)
	}
	var perr *provider.Error
	if _, err := c.ConfirmIntent(ctx, "confirm-2", in.ID); !errors.As(err, &perr) || !perr.UnexpectedState() {
		t.Fatalf("second confirm with another key: %v, want payment_intent_unexpected_state", err)
	}
	if got, err := c.RetrieveIntent(ctx, in.ID); err != nil || got.Status != "succeeded" || got.Charge != paid.Charge {
		t.Fatalf("retrieve = %+v, %v", got, err)
	}
	if n := len(sim.ChargesForOrder("ord_1")); n != 1 {
		t.Fatalf("%d charges for the order, want 1", n)
	}
	if _, err := c.CancelIntent(ctx, "cancel-1", in.ID); !errors.As(err, &perr) || !perr.UnexpectedState() {
		t.Fatalf("cancel of a succeeded intent: %v, want payment_intent_unexpected_state", err)
	}
}

// A slow confirm holds the intent in processing; a retrieve meanwhile says so, and
// the key is in use (409) until the confirm ends.
func TestSlowConfirmIsProcessing(t *testing.T) {
	sim, c := newSandbox(t)
	ctx := context.Background()
	in, err := c.CreateIntent(ctx, "create", 500, "EUR", "pm_card_visa", orderMeta)
	if err != nil {
		t.Fatal(err)
	}
	sim.SetFaults(sandbox.Faults{Only: "confirm", LatencyMS: 300})
	done := make(chan error, 1)
	go func() { _, err := c.ConfirmIntent(ctx, "confirm", in.ID); done <- err }()
	time.Sleep(100 * time.Millisecond)
	if got, err := c.RetrieveIntent(ctx, in.ID); err != nil || got.Status != "processing" {
		t.Fatalf("retrieve during the confirm = %+v, %v; want processing", got, err)
	}
	var perr *provider.Error
	if _, err := c.ConfirmIntent(ctx, "confirm", in.ID); !errors.As(err, &perr) || !perr.InUse() {
		t.Fatalf("the same key during the confirm: %v, want 409", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, _ := c.RetrieveIntent(ctx, in.ID); got.Status != "succeeded" {
		t.Fatalf("after the confirm: %s", got.Status)
	}
}

func TestDeclinedConfirmLeavesTheIntentWithoutMoney(t *testing.T) {
	sim, c := newSandbox(t)
	ctx := context.Background()
	in, err := c.CreateIntent(ctx, "create", 500, "EUR", "pm_card_chargeDeclined", orderMeta)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ConfirmIntent(ctx, "confirm", in.ID)
	var perr *provider.Error
	if !errors.As(err, &perr) || !perr.Declined() || perr.Intent == nil || perr.Intent.Status != "requires_payment_method" || perr.Intent.Declined != "generic_decline" {
		t.Fatalf("confirm of a declined card: %v (%+v)", err, perr)
	}
	if n := len(sim.Charges("")); n != 0 {
		t.Fatalf("%d charges after a decline", n)
	}
	if got, err := c.CancelIntent(ctx, "cancel", in.ID); err != nil || got.Status != "canceled" {
		t.Fatalf("cancel = %+v, %v", got, err)
	}
}

// Refunds by intent never exceed what is left, and list by intent whoever made them.
func TestRefundsByIntent(t *testing.T) {
	_, c := newSandbox(t)
	ctx := context.Background()
	in, _ := c.CreateIntent(ctx, "create", 1299, "USD", "pm_card_visa", orderMeta)
	if _, err := c.ConfirmIntent(ctx, "confirm", in.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RefundIntent(ctx, "someone-else", in.ID, 1, nil); err != nil {
		t.Fatal(err)
	}
	var perr *provider.Error
	if _, err := c.RefundIntent(ctx, "too-much", in.ID, 1299, nil); !errors.As(err, &perr) || perr.StatusCode != 400 {
		t.Fatalf("refund of more than is left: %v, want 400", err)
	}
	re, err := c.RefundIntent(ctx, "ours", in.ID, 1298, map[string]string{"refund_key": "ours"})
	if err != nil || re.Amount != 1298 || re.Intent != in.ID {
		t.Fatalf("refund of the rest = %+v, %v", re, err)
	}
	all, err := c.IntentRefunds(ctx, in.ID)
	if err != nil || len(all) != 2 {
		t.Fatalf("refunds of the intent = %+v, %v; want 2", all, err)
	}
}

// Every create and confirm of an order's intent counts as a call for the order
// as it arrives, replays included: the account's requests by order.
func TestOrderCallsCountCreatesAndConfirms(t *testing.T) {
	sim, c := newSandbox(t)
	ctx := context.Background()
	began := time.Now()
	in, err := c.CreateIntent(ctx, "create-1", 700, "USD", "pm_card_visa", orderMeta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIntent(ctx, "create-1", 700, "USD", "pm_card_visa", orderMeta); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConfirmIntent(ctx, "confirm-1", in.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIntent(ctx, "create-2", 700, "USD", "pm_card_visa", map[string]string{"order_id": "ord_2"}); err != nil {
		t.Fatal(err)
	}
	byOrder := map[string]int{}
	for _, call := range sim.OrderCalls(began) {
		byOrder[call.Order]++
	}
	if byOrder["ord_1"] != 3 || byOrder["ord_2"] != 1 || len(byOrder) != 2 {
		t.Fatalf("calls by order %v, want ord_1 3 and ord_2 1", byOrder)
	}
	if later := sim.OrderCalls(time.Now().Add(time.Second)); len(later) != 0 {
		t.Fatalf("%d calls after now", len(later))
	}
}
