package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/provider"
)

func TestClassifyProviderErrors(t *testing.T) {
	perr := func(code int, replayed bool) error {
		return &provider.Error{StatusCode: code, Type: "api_error", Message: "m", Replayed: replayed}
	}
	cases := []struct {
		name string
		err  error
		want verdict
	}{
		{"network error", errors.New("dial tcp: connection refused"), verdict{}},
		{"timeout", context.DeadlineExceeded, verdict{}},
		{"key in use", perr(http.StatusConflict, false), verdict{errType: ErrPaymentInFlight}},
		{"key in use, wrapped", fmt.Errorf("x: %w", perr(http.StatusConflict, false)), verdict{errType: ErrPaymentInFlight}},
		{"rate limited", perr(http.StatusTooManyRequests, false), verdict{}},
		{"fresh 500", perr(http.StatusInternalServerError, false), verdict{}},
		{"fresh 503", perr(http.StatusServiceUnavailable, false), verdict{}},
		{"saved 500", perr(http.StatusInternalServerError, true), verdict{ledger.Unknown, ErrPaymentUnknown}},
		{"wrapped saved 500", fmt.Errorf("charge: %w", perr(http.StatusInternalServerError, true)), verdict{ledger.Unknown, ErrPaymentUnknown}},
		{"declined", perr(http.StatusPaymentRequired, false), verdict{ledger.Declined, ErrCardDeclined}},
		{"declined, replayed", perr(http.StatusPaymentRequired, true), verdict{ledger.Declined, ErrCardDeclined}},
		{"unauthorized", perr(http.StatusUnauthorized, false), verdict{errType: ErrProviderUnauthorized}},
		{"forbidden", perr(http.StatusForbidden, false), verdict{errType: ErrProviderUnauthorized}},
		{"invalid request", perr(http.StatusBadRequest, false), verdict{ledger.Rejected, ErrPaymentRejected}},
		{"not found", perr(http.StatusNotFound, true), verdict{ledger.Rejected, ErrPaymentRejected}},
	}
	for _, c := range cases {
		if got := classify(c.err); got != c.want {
			t.Errorf("%s: classify = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Activities scheduled by an earlier worker carry their inputs as flat JSON: the
// embedded Step must keep every field at the top level.
func TestPaymentInputsKeepTheirWireShape(t *testing.T) {
	step := Step{WorkflowID: "order:acme:k", OrderID: "ord_1", Amount: 1299, Currency: "USD", Key: "ofpay_x"}
	pay, _ := json.Marshal(PayInput{IntentInput: IntentInput{Step: step, Tenant: "acme", PaymentMethod: "pm_card_visa"}, ConfirmKey: "ofpay_y"})
	if want := `{"WorkflowID":"order:acme:k","OrderID":"ord_1","Amount":1299,"Currency":"USD","Key":"ofpay_x","Tenant":"acme","PaymentMethod":"pm_card_visa","ConfirmKey":"ofpay_y"}`; string(pay) != want {
		t.Errorf("pay input = %s, want %s", pay, want)
	}
	var in RefundIntentInput
	if err := json.Unmarshal([]byte(`{"WorkflowID":"order:acme:k","OrderID":"ord_1","IntentID":"pi_1","Amount":1299,"Currency":"USD","Key":""}`), &in); err != nil {
		t.Fatal(err)
	}
	if in.OrderID != "ord_1" || in.IntentID != "pi_1" || in.Amount != 1299 || in.WorkflowID != "order:acme:k" {
		t.Errorf("refund input from an earlier worker = %+v", in)
	}
}

// Pay sends the confirm's key with the intent the creation made; a confirm's error
// keeps its type and carries the intent, final unless it is refused credentials; a
// creation's error is passed on as it is, with no intent.
func TestPayComposesCreationAndConfirm(t *testing.T) {
	in := PayInput{IntentInput: IntentInput{Step: Step{OrderID: "o1", Key: "k-intent"}}, ConfirmKey: "k-confirm"}
	created := func(context.Context, IntentInput) (IntentResult, error) {
		return IntentResult{Key: "k-intent", IntentID: "pi_1"}, nil
	}
	var sent ConfirmInput
	confirmErr := func(err error) func(context.Context, ConfirmInput) (IntentState, error) {
		return func(_ context.Context, c ConfirmInput) (IntentState, error) { sent = c; return IntentState{}, err }
	}
	for _, c := range []struct {
		typ       string
		retryable bool
	}{{ErrPaymentInFlight, false}, {ErrPaymentUnknown, false}, {ErrCardDeclined, false}, {ErrProviderUnauthorized, true}} {
		res, err := Pay(context.Background(), in, created, confirmErr(temporal.NewApplicationError("m", c.typ)))
		var appErr *temporal.ApplicationError
		var with PaidWith
		if !errors.As(err, &appErr) || appErr.Type() != c.typ || appErr.NonRetryable() == c.retryable ||
			appErr.Details(&with) != nil || with.IntentID != "pi_1" || res.IntentID != "pi_1" {
			t.Fatalf("%s: error %v (%+v), result %+v; want the type, retryable=%v, with pi_1", c.typ, err, with, res, c.retryable)
		}
		if sent.Key != "k-confirm" || sent.IntentID != "pi_1" || sent.OrderID != "o1" {
			t.Fatalf("confirm sent %+v", sent)
		}
	}
	refused := temporal.NewNonRetryableApplicationError("bad amount", ErrPaymentRejected, nil)
	sent = ConfirmInput{}
	res, err := Pay(context.Background(), in, func(context.Context, IntentInput) (IntentResult, error) { return IntentResult{}, refused },
		confirmErr(nil))
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.HasDetails() || res.IntentID != "" || sent.Key != "" {
		t.Fatalf("creation refused: %v, %+v; want the error without an intent", err, res)
	}
}
