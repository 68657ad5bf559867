package activities

import (
	"testing"

	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
)

func row(id string, status refund.Status, amount int64, key string) refundstore.Row {
	return refundstore.Row{Refund: refund.Refund{ID: id}, Status: status, Amount: amount, Key: key}
}

func atProvider(amount int64, status, request string) provider.Refund {
	md := map[string]string{}
	if request != "" {
		md[refundRequestField] = request
	}
	return provider.Refund{ID: "re_" + request, Amount: amount, Status: status, Metadata: md}
}

// What is left counts each refund once: a request's reservation whether or not
// the provider shows it yet, and a refund at the provider that no reservation
// explains (a dashboard's, the cancel's, a request's whose row holds nothing).
func TestLeftToRefundCountsEachRefundOnce(t *testing.T) {
	reserved := []refundstore.Row{
		row("rfd_a", refund.StatusSucceeded, 100, "k_a"), // at the provider too
		row("rfd_b", refund.StatusPending, 200, "k_b"),   // not yet
		row("rfd_c", refund.StatusFailed, 300, "k_c"),    // refused: holds nothing
		row("rfd_self", refund.StatusPending, 0, ""),
	}
	refunds := []provider.Refund{
		atProvider(100, "succeeded", "rfd_a"),
		atProvider(50, "pending", ""),        // a dashboard's, on its way
		atProvider(70, "failed", ""),         // gave nothing back
		atProvider(30, "succeeded", "rfd_x"), // a request whose row holds nothing
	}
	if got, want := leftToRefund(1299, refunds, reserved, "rfd_self"), int64(1299-100-200-50-30); got != want {
		t.Fatalf("left = %d, want %d", got, want)
	}
	// A refund's own reservation, at the provider or not, is not weighed against it.
	reserved[3] = row("rfd_self", refund.StatusPending, 500, "k_self")
	refunds = append(refunds, atProvider(500, "succeeded", "rfd_self"))
	if got, want := leftToRefund(1299, refunds, reserved, "rfd_self"), int64(1299-100-200-50-30); got != want {
		t.Fatalf("left = %d, want %d", got, want)
	}
}

// A reservation whose refund the provider failed (after it succeeded, or while
// pending) is not money: it counts for nothing, before and after its row is
// settled FAILED.
func TestLeftToRefundSkipsARefundTheProviderFailed(t *testing.T) {
	reserved := []refundstore.Row{
		row("rfd_a", refund.StatusSucceeded, 400, "k_a"), // failed at the provider since
		row("rfd_b", refund.StatusPending, 200, "k_b"),   // not at the provider yet
		row("rfd_self", refund.StatusPending, 0, ""),
	}
	refunds := []provider.Refund{atProvider(400, "failed", "rfd_a")}
	if got, want := leftToRefund(1299, refunds, reserved, "rfd_self"), int64(1299-200); got != want {
		t.Fatalf("left = %d, want %d", got, want)
	}
}

// An open refund key of the order that none of its requests sent is the order's
// own refund: its cancel's, which gives back all that is left.
func TestOwnRefundIsAKeyNoRequestSent(t *testing.T) {
	reserved := []refundstore.Row{row("rfd_a", refund.StatusPending, 100, "k_a")}
	if ownRefund([]string{"k_a"}, reserved) || ownRefund(nil, reserved) {
		t.Fatal("a request's key taken for the order's own refund")
	}
	if !ownRefund([]string{"k_a", "ofpay_cancel"}, reserved) {
		t.Fatal("the cancel's refund not seen")
	}
}
