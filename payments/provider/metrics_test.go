package provider

import (
	"errors"
	"net/http"
	"testing"
)

// Every request orderflow makes has an operation of its own; anything else is
// "other", so paths (IDs) never become label values.
func TestOperationAndOutcomeLabels(t *testing.T) {
	for _, row := range []struct{ method, path, want string }{
		{"POST", "/v1/payment_intents", "create_intent"},
		{"GET", "/v1/payment_intents/pi_123", "retrieve_intent"},
		{"POST", "/v1/payment_intents/pi_123/confirm", "confirm_intent"},
		{"POST", "/v1/payment_intents/pi_123/cancel", "cancel_intent"},
		{"GET", "/v1/payment_intents/search", "search_intents"},
		{"POST", "/v1/refunds", "refund"},
		{"GET", "/v1/refunds", "list_refunds"},
		{"POST", "/v1/charges", "charge"},
		{"GET", "/v1/charges/search", "list_charges"},
		{"GET", "/v1/payment_intents/pi_123/something/else", "other"},
		{"GET", "/pi_made_up", "other"},
	} {
		if got := operation(row.method, row.path); got != row.want {
			t.Errorf("%s %s: %s, want %s", row.method, row.path, got, row.want)
		}
	}
	for status, want := range map[int]string{200: "ok", 402: "declined", 409: "conflict", 401: "unauthorized", 403: "unauthorized",
		429: "rate_limited", 500: "server_error", 503: "server_error", 400: "refused", 404: "refused"} {
		if got := outcome(&http.Response{StatusCode: status}, nil); got != want {
			t.Errorf("%d: %s, want %s", status, got, want)
		}
	}
	if outcome(nil, errors.New("timeout")) != "network" {
		t.Error("a network error is not network")
	}
}
