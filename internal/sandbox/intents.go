package sandbox

import (
	"net/http"
	"time"
)

// Intent is the sandbox's PaymentIntent object.
type Intent struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Amount             int64             `json:"amount"`
	AmountReceived     int64             `json:"amount_received"`
	Currency           string            `json:"currency"`
	Status             string            `json:"status"`
	PaymentMethod      string            `json:"payment_method,omitempty"`
	PaymentMethodTypes []string          `json:"payment_method_types"`
	LatestCharge       string            `json:"latest_charge,omitempty"`
	LastPaymentError   map[string]string `json:"last_payment_error,omitempty"`
	CancellationReason string            `json:"cancellation_reason,omitempty"`
	Created            int64             `json:"created"`
	Metadata           map[string]string `json:"metadata"`
	createdMS          int64
}

// Statuses of a PaymentIntent, as Stripe names them.
const (
	requiresPaymentMethod = "requires_payment_method"
	requiresConfirmation  = "requires_confirmation"
	processing            = "processing"
	succeeded             = "succeeded"
	canceled              = "canceled"
)

// intent finds an intent by ID; the caller holds s.mu.
func (s *Server) intent(id string) *Intent {
	for _, in := range s.intents {
		if in.ID == id {
			return in
		}
	}
	return nil
}

func noSuchIntent(id string) (int, any) {
	return http.StatusNotFound, errorBody("invalid_request_error", "resource_missing", "No such payment_intent: '"+id+"'")
}

func unexpectedState(in *Intent, action string) (int, any) {
	return http.StatusBadRequest, errorBody("invalid_request_error", "payment_intent_unexpected_state",
		"You cannot "+action+" this PaymentIntent because it has a status of "+in.Status+".")
}

// createIntent makes an intent; it moves no money. With a payment method it waits
// for a confirm (requires_confirmation).
func (s *Server) createIntent(w http.ResponseWriter, r *http.Request) {
	if !form(w, r) {
		return
	}
	amount, currency, ok := amountAndCurrency(w, r)
	if !ok {
		return
	}
	if r.PostForm.Get("confirm") == "true" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_unsupported", "the sandbox confirms with POST /v1/payment_intents/{id}/confirm only")
		return
	}
	pm, md := r.PostForm.Get("payment_method"), metadata(r)
	if !knownPaymentMethod(pm) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "resource_missing", "No such PaymentMethod: '"+pm+"'")
		return
	}
	types := r.PostForm["payment_method_types[0]"]
	if len(types) == 0 {
		types = []string{"card"}
	}
	s.idempotent(w, r, r.PostForm.Encode(), "create", func(_ string, wait func()) (int, any) {
		wait()
		now := time.Now()
		in := &Intent{ID: newID("pi"), Object: "payment_intent", Amount: amount, Currency: currency,
			Status: requiresPaymentMethod, PaymentMethod: pm, PaymentMethodTypes: types,
			Created: now.Unix(), createdMS: now.UnixMilli(), Metadata: md}
		if pm != "" {
			in.Status = requiresConfirmation
		}
		s.mu.Lock()
		s.intents = append(s.intents, in)
		cp := *in
		s.mu.Unlock()
		return http.StatusOK, cp
	})
}

// confirmIntent charges the intent's payment method: processing while it runs,
// then succeeded (one charge) or, declined, requires_payment_method with a 402. An
// intent succeeds at most once: a confirm of one that is processing, succeeded or
// canceled is refused.
func (s *Server) confirmIntent(w http.ResponseWriter, r *http.Request) {
	if !form(w, r) {
		return
	}
	id := r.PathValue("id")
	s.idempotent(w, r, r.PostForm.Encode(), "confirm", func(key string, wait func()) (int, any) {
		s.mu.Lock()
		in := s.intent(id)
		switch {
		case in == nil:
			s.mu.Unlock()
			return noSuchIntent(id)
		case r.PostForm.Get("payment_method") != "":
			in.PaymentMethod = r.PostForm.Get("payment_method")
		}
		if (in.Status != requiresConfirmation && in.Status != requiresPaymentMethod) || in.PaymentMethod == "" {
			defer s.mu.Unlock()
			if in.PaymentMethod == "" {
				return http.StatusBadRequest, errorBody("invalid_request_error", "payment_intent_unexpected_state", "You cannot confirm this PaymentIntent because it's missing a payment method.")
			}
			return unexpectedState(in, "confirm")
		}
		in.Status, in.LastPaymentError = processing, nil
		s.mu.Unlock()

		wait()

		s.mu.Lock()
		defer s.mu.Unlock()
		if declined(in.PaymentMethod) {
			in.Status = requiresPaymentMethod
			in.LastPaymentError = map[string]string{"type": "card_error", "code": "card_declined", "decline_code": "generic_decline", "message": "Your card was declined."}
			body := errorBody("card_error", "card_declined", "Your card was declined.")
			body["error"].(map[string]any)["decline_code"] = "generic_decline"
			body["error"].(map[string]any)["payment_intent"] = *in
			return http.StatusPaymentRequired, body
		}
		md := map[string]string{}
		for k, v := range in.Metadata {
			md[k] = v
		}
		c := s.newCharge(in.Amount, in.Currency, md, key)
		c.PaymentIntent = in.ID
		in.Status, in.LatestCharge, in.AmountReceived = succeeded, c.ID, in.Amount
		s.logger.Info("sandbox charge", "charge", c.ID, "payment_intent", in.ID, "amount", in.Amount, "order_id", md["order_id"])
		return http.StatusOK, *in
	})
}

// cancelIntent cancels an intent that has not succeeded.
func (s *Server) cancelIntent(w http.ResponseWriter, r *http.Request) {
	if !form(w, r) {
		return
	}
	id := r.PathValue("id")
	s.idempotent(w, r, r.PostForm.Encode(), "cancel", func(_ string, wait func()) (int, any) {
		wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		in := s.intent(id)
		switch {
		case in == nil:
			return noSuchIntent(id)
		case in.Status == succeeded || in.Status == processing || in.Status == canceled:
			return unexpectedState(in, "cancel")
		}
		in.Status, in.CancellationReason = canceled, r.PostForm.Get("cancellation_reason")
		return http.StatusOK, *in
	})
}

// retrieveIntent reads an intent by ID: always current.
func (s *Server) retrieveIntent(w http.ResponseWriter, r *http.Request) {
	if !s.gate(w, "") {
		return
	}
	s.mu.Lock()
	in := s.intent(r.PathValue("id"))
	var cp Intent
	if in != nil {
		cp = *in
	}
	s.mu.Unlock()
	if in == nil {
		status, body := noSuchIntent(r.PathValue("id"))
		writeJSON(w, status, body)
		return
	}
	writeJSON(w, http.StatusOK, cp)
}

// searchIntents answers GET /v1/payment_intents/search?query=metadata['order_id']:'ID'
// with the intents created at least SearchDelay ago, like Stripe's search.
func (s *Server) searchIntents(w http.ResponseWriter, r *http.Request) {
	orderID, ok := s.searchedOrder(w, r)
	if !ok {
		return
	}
	visible := time.Now().Add(-s.searchDelay())
	out := []Intent{}
	s.mu.Lock()
	for _, in := range s.intents {
		if in.Metadata["order_id"] == orderID && !time.UnixMilli(in.createdMS).After(visible) {
			out = append(out, *in)
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"object": "search_result", "data": out, "has_more": false})
}

// Intents returns the intents made for an order (metadata order_id), at once: the
// test's view, not the eventually consistent search.
func (s *Server) Intents(orderID string) []Intent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Intent
	for _, in := range s.intents {
		if orderID == "" || in.Metadata["order_id"] == orderID {
			out = append(out, *in)
		}
	}
	return out
}
