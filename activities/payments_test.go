package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/orderflow/orderflow/internal/ledger"
	"github.com/orderflow/orderflow/internal/provider"
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
		{"key in use", perr(http.StatusConflict, false), verdict{}},
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
