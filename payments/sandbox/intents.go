package sandbox

import (
	"fmt"
	"html"
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
	ClientSecret       string            `json:"client_secret"`
	NextAction         map[string]any    `json:"next_action"`
	Created            int64             `json:"created"`
	Metadata           map[string]string `json:"metadata"`
	createdMS          int64
	returnURL          string // the confirm's, where the authentication page sends the customer back
}

// Statuses of a PaymentIntent, as Stripe names them.
const (
	requiresPaymentMethod = "requires_payment_method"
	requiresConfirmation  = "requires_confirmation"
	processing            = "processing"
	requiresAction        = "requires_action"
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
	s.mu.Lock()
	s.recordOrderCall(md["order_id"])
	s.mu.Unlock()
	s.idempotent(w, r, r.PostForm.Encode(), "create", func(_ string, wait func()) (int, any) {
		wait()
		now := time.Now()
		in := &Intent{ID: newID("pi"), Object: "payment_intent", Amount: amount, Currency: currency,
			Status: requiresPaymentMethod, PaymentMethod: pm, PaymentMethodTypes: types,
			Created: now.Unix(), createdMS: now.UnixMilli(), Metadata: md}
		in.ClientSecret = in.ID + "_secret_" + newID("cs")[3:]
		if pm != "" {
			in.Status = requiresConfirmation
		}
		s.mu.Lock()
		s.intents = append(s.intents, in)
		cp := *in
		s.emit("payment_intent.created", cp)
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
	s.mu.Lock()
	if in := s.intent(id); in != nil {
		s.recordOrderCall(in.Metadata["order_id"])
	}
	s.mu.Unlock()
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
		in.returnURL = r.PostForm.Get("return_url")
		s.mu.Unlock()

		wait()

		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case needsAuthentication(in.PaymentMethod):
			in.Status, in.NextAction = requiresAction, nextAction(r, in)
			s.emit("payment_intent.requires_action", *in)
			return http.StatusOK, *in
		case declined(in.PaymentMethod):
			s.decline(in, "card_declined", "generic_decline", "Your card was declined.")
			body := errorBody("card_error", "card_declined", "Your card was declined.")
			body["error"].(map[string]any)["decline_code"] = "generic_decline"
			body["error"].(map[string]any)["payment_intent"] = *in
			return http.StatusPaymentRequired, body
		}
		s.succeed(in, key)
		return http.StatusOK, *in
	})
}

// succeed charges the intent: its one charge. The caller holds s.mu.
func (s *Server) succeed(in *Intent, key string) {
	md := map[string]string{}
	for k, v := range in.Metadata {
		md[k] = v
	}
	c := s.newCharge(in.Amount, in.Currency, md, key)
	c.PaymentIntent, c.card = in.ID, in.PaymentMethod
	in.Status, in.LatestCharge, in.AmountReceived, in.NextAction = succeeded, c.ID, in.Amount, nil
	s.logger.Info("sandbox charge", "charge", c.ID, "payment_intent", in.ID, "amount", in.Amount, "order_id", md["order_id"])
	s.emit("charge.succeeded", *c)
	s.emit("payment_intent.succeeded", *in)
}

// decline leaves the intent needing another payment method after a failed
// attempt. The caller holds s.mu.
func (s *Server) decline(in *Intent, code, declineCode, message string) {
	in.Status, in.NextAction = requiresPaymentMethod, nil
	in.LastPaymentError = map[string]string{"type": "card_error", "code": code, "message": message}
	if declineCode != "" {
		in.LastPaymentError["decline_code"] = declineCode
	}
	if code == "payment_intent_authentication_failure" {
		in.LastPaymentError["type"] = "invalid_request_error"
	}
	s.emit("payment_intent.payment_failed", *in)
}

// nextAction is what Stripe answers a confirm that needs 3-D Secure with: a
// redirect to the authentication page when the confirm named a return_url, the
// data Stripe.js needs otherwise.
func nextAction(r *http.Request, in *Intent) map[string]any {
	page := "http://" + r.Host + "/sandbox/3ds/" + in.ID
	if in.returnURL != "" {
		return map[string]any{"type": "redirect_to_url",
			"redirect_to_url": map[string]string{"url": page, "return_url": in.returnURL}}
	}
	return map[string]any{"type": "use_stripe_sdk",
		"use_stripe_sdk": map[string]string{"type": "three_d_secure_redirect", "stripe_js": page}}
}

// authenticate completes (outcome=complete) or fails (outcome=fail) the pending
// authentication of an intent, as the customer would on Stripe's 3-D Secure test
// page: completed, the intent is charged (or declined, for the card that declines
// after authentication); failed, it needs another payment method with
// payment_intent_authentication_failure. With redirect=1 the answer sends the
// customer back to the confirm's return_url.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) {
	if !form(w, r) {
		return
	}
	outcome := r.PostForm.Get("outcome")
	if outcome != "complete" && outcome != "fail" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "outcome must be complete or fail")
		return
	}
	s.mu.Lock()
	in := s.intent(r.PathValue("id"))
	switch {
	case in == nil:
		s.mu.Unlock()
		status, body := noSuchIntent(r.PathValue("id"))
		writeJSON(w, status, body)
		return
	case in.Status != requiresAction:
		s.mu.Unlock()
		status, body := unexpectedState(in, "authenticate")
		writeJSON(w, status, body)
		return
	}
	switch {
	case outcome == "fail":
		s.decline(in, "payment_intent_authentication_failure", "",
			"The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again.")
	case declinedAfterAuthentication(in.PaymentMethod):
		s.decline(in, "card_declined", "insufficient_funds", "Your card has insufficient funds.")
	default:
		s.succeed(in, "3ds:"+in.ID)
	}
	cp := *in
	s.mu.Unlock()
	if !s.committed(w, nil) {
		return
	}
	if r.PostForm.Get("redirect") == "1" && cp.returnURL != "" {
		status := "succeeded"
		if cp.Status != succeeded {
			status = "failed"
		}
		http.Redirect(w, r, cp.returnURL+"?payment_intent="+cp.ID+"&redirect_status="+status, http.StatusSeeOther)
		return
	}
	writeJSON(w, http.StatusOK, cp)
}

// authenticationPage is the sandbox's 3-D Secure page: two buttons.
func (s *Server) authenticationPage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	in := s.intent(r.PathValue("id"))
	s.mu.Unlock()
	if in == nil {
		status, body := noSuchIntent(r.PathValue("id"))
		writeJSON(w, status, body)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	id := html.EscapeString(in.ID)
	_, _ = fmt.Fprintf(w, `<!doctype html><title>3-D Secure (SANDBOX)</title>
<h1>3-D Secure test payment (SANDBOX)</h1><p>Payment %s</p>
<form method="post"><input type="hidden" name="redirect" value="1">
<button name="outcome" value="complete">Complete authentication</button>
<button name="outcome" value="fail">Fail authentication</button></form>`, id)
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
		in.Status, in.CancellationReason, in.NextAction = canceled, r.PostForm.Get("cancellation_reason"), nil
		s.emit("payment_intent.canceled", *in)
		return http.StatusOK, *in
	})
}

// retrieveIntent reads an intent by ID: always current.
func (s *Server) retrieveIntent(w http.ResponseWriter, r *http.Request) {
	if !s.gate(w, "") {
		return
	}
	if latency := s.readLatency(); latency > 0 {
		time.Sleep(latency)
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

// listIntents lists intents as Stripe does (see paginate).
func (s *Server) listIntents(w http.ResponseWriter, r *http.Request) {
	if !s.gate(w, "") {
		return
	}
	s.mu.Lock()
	out := make([]Intent, 0, len(s.intents))
	for _, in := range s.intents {
		out = append(out, *in)
	}
	s.mu.Unlock()
	paginate(w, r, "/v1/payment_intents", out, func(in Intent) (string, int64) { return in.ID, in.Created })
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
