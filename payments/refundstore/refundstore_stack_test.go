//go:build stack

package refundstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform/identity"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

func newRefund(tenant, orderID string, amount int64) refund.Refund {
	wf := refund.WorkflowID(tenant, identity.FromHTTP, stacktest.Name("k"))
	return refund.Refund{ID: refund.IDFor(wf), Tenant: tenant, WorkflowID: wf, OrderID: orderID, Amount: amount,
		Reason: refund.ReasonRequestedByCustomer}
}

// A refund recorded twice (the ingress, then the workflow's first step) is one
// row, PENDING, readable by its tenant alone, and settled once.
func TestRecordGetAndSettle(t *testing.T) {
	s := refundstore.New(stacktest.Pool(t))
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	r := newRefund(tenant, "ord_x", 100)
	for range 2 {
		row, err := s.Record(ctx, r)
		if err != nil || row.ID != r.ID || row.Status != refund.StatusPending || row.AmountRequested != 100 || row.Amount != 0 ||
			row.Refund.Amount != 100 || row.Reason != refund.ReasonRequestedByCustomer || len(row.Fingerprint) != 33 {
			t.Fatalf("record: %+v, %v", row, err)
		}
	}
	if _, err := s.Get(ctx, "other", r.ID); !errors.Is(err, refundstore.ErrNotFound) {
		t.Fatalf("another tenant's refund: %v, want ErrNotFound", err)
	}
	if err := s.Reserve(ctx, r.ID, 100, "USD"); err != nil {
		t.Fatal(err)
	}
	if err := s.Reserve(ctx, r.ID, 50, "USD"); err != nil { // reserved already: kept
		t.Fatal(err)
	}
	if ended, err := s.Settle(ctx, r.ID, "re_1", 100); err != nil || !ended {
		t.Fatalf("settle: ended %v, %v; want it ended", ended, err)
	}
	if ended, err := s.Settle(ctx, r.ID, "re_1", 100); err != nil || ended { // a retry: ended once
		t.Fatalf("settle again: ended %v, %v; want it ended before", ended, err)
	}
	if ended, err := s.Fail(ctx, r.ID, "too late"); err != nil || ended { // settled: kept
		t.Fatalf("fail after settled: ended %v, %v; want it kept", ended, err)
	}
	row, err := s.GetByWorkflow(ctx, tenant, r.WorkflowID)
	if err != nil || row.Status != refund.StatusSucceeded || row.Amount != 100 || row.ProviderRefundID != "re_1" || row.Failure != "" ||
		row.Currency != "USD" || !row.Holds() {
		t.Fatalf("settled: %+v, %v", row, err)
	}
}

// An order's refunds come newest first, a page at a time, and a cursor the store
// did not issue is refused.
func TestListByOrderPages(t *testing.T) {
	s := refundstore.New(stacktest.Pool(t))
	ctx := context.Background()
	tenant := stacktest.Name("tenant")
	var ids []string
	for range 5 {
		row, err := s.Record(ctx, newRefund(tenant, "ord_y", 0))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row.ID)
	}
	if _, err := s.Record(ctx, newRefund(tenant, "ord_other", 0)); err != nil {
		t.Fatal(err)
	}
	var got []string
	cursor := ""
	for page := 0; ; page++ {
		rows, next, err := s.ListByOrder(ctx, tenant, "ord_y", 2, cursor)
		if err != nil || page > 3 {
			t.Fatalf("page %d: %v", page, err)
		}
		for _, r := range rows {
			got = append(got, r.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(got) != 5 {
		t.Fatalf("listed %v, want the 5 of %v", got, ids)
	}
	seen := map[string]bool{}
	for _, id := range got {
		seen[id] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Fatalf("listed %v, want %s among them", got, id)
		}
	}
	if rows, _, err := s.ListByOrder(ctx, "other", "ord_y", 10, ""); err != nil || len(rows) != 0 {
		t.Fatalf("another tenant's list: %v, %v", rows, err)
	}
	if _, _, err := s.ListByOrder(ctx, tenant, "ord_y", 2, "not-a-cursor!"); !errors.Is(err, refundstore.ErrBadCursor) {
		t.Fatalf("bad cursor: %v", err)
	}
}
