package sandbox

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Charge is the sandbox's charge object; IdempotencyKey is a sandbox extension that
// lets tests count charges per key (the key of the charge, or of the confirm that
// made it).
type Charge struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Amount         int64             `json:"amount"`
	AmountRefunded int64             `json:"amount_refunded"`
	Currency       string            `json:"currency"`
	Status         string            `json:"status"`
	Paid           bool              `json:"paid"`
	Refunded       bool              `json:"refunded"`
	Disputed       bool              `json:"disputed"`
	Created        int64             `json:"created"`
	Metadata       map[string]string `json:"metadata"`
	PaymentIntent  string            `json:"payment_intent,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	createdMS      int64
	card           string // the payment method or token charged
}

// Refund is the sandbox's refund object.
type Refund struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Charge         string            `json:"charge"`
	PaymentIntent  string            `json:"payment_intent,omitempty"`
	Amount         int64             `json:"amount"`
	Status         string            `json:"status"`
	FailureReason  string            `json:"failure_reason,omitempty"`
	Created        int64             `json:"created"`
	Metadata       map[string]string `json:"metadata"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	failAt         time.Time         // when it fails (zero: it does not)
}

// form parses a write's form body; false when it answered 400.
func form(w http.ResponseWriter, r *http.Request) bool {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "malformed form body")
		return false
	}
	return true
}

// amountAndCurrency reads a positive amount in minor units and a 3-letter currency.
func amountAndCurrency(w http.ResponseWriter, r *http.Request) (int64, string, bool) {
	amount, err := strconv.ParseInt(r.PostForm.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid_integer", "amount must be a positive integer in minor units")
		return 0, "", false
	}
	currency := strings.ToLower(r.PostForm.Get("currency"))
	if len(currency) != 3 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "currency must be a 3-letter ISO code")
		return 0, "", false
	}
	return amount, currency, true
}

// metadata collects the metadata[...] parameters.
func metadata(r *http.Request) map[string]string {
	md := map[string]string{}
	for k, v := range r.PostForm {
		if name, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(name, "]") && len(v) > 0 {
			md[strings.TrimSuffix(name, "]")] = v[0]
		}
	}
	return md
}

// createCharge is the Charges API, kept for runs started before PaymentIntents.
func (s *Server) createCharge(w http.ResponseWriter, r *http.Request) {
	if !form(w, r) {
		return
	}
	amount, currency, ok := amountAndCurrency(w, r)
	if !ok {
		return
	}
	source := r.PostForm.Get("source")
	if source == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_missing", "source is required")
		return
	}
	md := metadata(r)
	s.idempotent(w, r, r.PostForm.Encode(), "charge", func(key string, wait func()) (int, any) {
		wait()
		if declined(source) {
			return http.StatusPaymentRequired, errorBody("card_error", "card_declined", "Your card was declined.")
		}
		s.mu.Lock()
		c := s.newCharge(amount, currency, md, key)
		c.card = source
		cp := *c
		s.mu.Unlock()
		s.logger.Info("sandbox charge", "charge", c.ID, "amount", amount, "currency", currency, "order_id", md["order_id"])
		return http.StatusOK, cp
	})
}

// newCharge records a succeeded charge; the caller holds s.mu.
func (s *Server) newCharge(amount int64, currency string, md map[string]string, key string) *Charge {
	now := time.Now()
	c := &Charge{
		ID: newID("ch"), Object: "charge", Amount: amount, Currency: currency,
		Status: "succeeded", Paid: true, Created: now.Unix(), createdMS: now.UnixMilli(),
		Metadata: md, IdempotencyKey: key,
	}
	s.charges = append(s.charges, c)
	return c
}

// createRefund refunds a charge, named by charge or by payment_intent (its latest
// charge); without an amount, what is left of it. A refund never exceeds what the
// charge has left.
func (s *Server) createRefund(w http.ResponseWriter, r *http.Request) {
	if !form(w, r) {
		return
	}
	chargeID, intentID := r.PostForm.Get("charge"), r.PostForm.Get("payment_intent")
	if (chargeID == "") == (intentID == "") {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_missing", "one of charge or payment_intent is required")
		return
	}
	amount, err := strconv.ParseInt(r.PostForm.Get("amount"), 10, 64)
	if r.PostForm.Get("amount") != "" && (err != nil || amount <= 0) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid_integer", "amount must be a positive integer")
		return
	}
	md := metadata(r)
	s.idempotent(w, r, r.PostForm.Encode(), "refund", func(key string, wait func()) (int, any) {
		wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		c := s.refundable(chargeID, intentID)
		if c == nil {
			return http.StatusNotFound, errorBody("invalid_request_error", "resource_missing", "No such charge or payment intent with a charge: "+chargeID+intentID)
		}
		left := c.Amount - c.AmountRefunded
		if s.disputed(c.ID) {
			return http.StatusBadRequest, errorBody("invalid_request_error", "charge_disputed", "Charge "+c.ID+" has been disputed; it cannot be refunded.")
		}
		if left == 0 {
			return http.StatusBadRequest, errorBody("invalid_request_error", "charge_already_refunded", "Charge "+c.ID+" has already been refunded.")
		}
		if amount == 0 {
			amount = left
		}
		if amount > left {
			return http.StatusBadRequest, errorBody("invalid_request_error", "amount_too_large", "Refund amount is greater than the unrefunded amount of the charge.")
		}
		c.AmountRefunded += amount
		c.Refunded = c.AmountRefunded == c.Amount
		re := &Refund{ID: newID("re"), Object: "refund", Charge: c.ID, PaymentIntent: c.PaymentIntent, Amount: amount,
			Status: "succeeded", Created: time.Now().Unix(), Metadata: md, IdempotencyKey: key}
		if fails, pending := refundFails(c.card); fails {
			if pending {
				re.Status = "pending"
			}
			re.failAt = time.Now().Add(s.opts.RefundFailAfter)
			s.scheduleFailure(re.ID, re.failAt)
		}
		s.refunds = append(s.refunds, re)
		s.emit("charge.refunded", *c)
		return http.StatusOK, *re
	})
}

// refundable finds the charge a refund names; the caller holds s.mu.
func (s *Server) refundable(chargeID, intentID string) *Charge {
	if intentID != "" {
		if in := s.intent(intentID); in != nil {
			chargeID = in.LatestCharge
		}
	}
	for _, c := range s.charges {
		if chargeID != "" && c.ID == chargeID {
			return c
		}
	}
	return nil
}

// listCharges lists charges as Stripe does (see paginate); idempotency_key is the
// sandbox's filter for tests.
func (s *Server) listCharges(w http.ResponseWriter, r *http.Request) {
	if !s.gate(w, "") {
		return
	}
	paginate(w, r, "/v1/charges", s.Charges(r.URL.Query().Get("idempotency_key")),
		func(c Charge) (string, int64) { return c.ID, c.Created })
}

// searchCharges answers GET /v1/charges/search?query=metadata['order_id']:'ID' with
// the charges created at least SearchDelay ago, like Stripe's search.
func (s *Server) searchCharges(w http.ResponseWriter, r *http.Request) {
	orderID, ok := s.searchedOrder(w, r)
	if !ok {
		return
	}
	visible := time.Now().Add(-s.searchDelay())
	out := []Charge{}
	for _, c := range s.ChargesForOrder(orderID) {
		if !time.UnixMilli(c.createdMS).After(visible) {
			out = append(out, c)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "search_result", "data": out, "has_more": false})
}

// searchedOrder reads the one query the sandbox's search understands.
func (s *Server) searchedOrder(w http.ResponseWriter, r *http.Request) (string, bool) {
	if !s.gate(w, "") {
		return "", false
	}
	orderID, prefixed := strings.CutPrefix(r.URL.Query().Get("query"), "metadata['order_id']:'")
	orderID, quoted := strings.CutSuffix(orderID, "'")
	if !prefixed || !quoted || orderID == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "the sandbox searches by metadata['order_id']:'ID' only")
		return "", false
	}
	return orderID, true
}

// listRefunds lists refunds as Stripe does (see paginate), by charge or
// payment_intent (and, for tests, key).
func (s *Server) listRefunds(w http.ResponseWriter, r *http.Request) {
	if !s.gate(w, "") {
		return
	}
	q := r.URL.Query()
	key, charge, intent := q.Get("idempotency_key"), q.Get("charge"), q.Get("payment_intent")
	s.mu.Lock()
	var out []Refund
	for _, re := range s.refunds {
		if (key == "" || re.IdempotencyKey == key) && (charge == "" || re.Charge == charge) && (intent == "" || re.PaymentIntent == intent) {
			out = append(out, *re)
		}
	}
	s.mu.Unlock()
	paginate(w, r, "/v1/refunds", out, func(re Refund) (string, int64) { return re.ID, re.Created })
}

// Preload records n succeeded charges of amount, one per order that orderOf names,
// each on an intent that intentOf names, as if they had been made (a load for
// tests that need many).
func (s *Server) Preload(n int, amount int64, currency string, orderOf, intentOf func(i int) string) {
	s.mu.Lock()
	for i := range n {
		c := s.newCharge(amount, strings.ToLower(currency), map[string]string{"order_id": orderOf(i)}, "")
		c.PaymentIntent = intentOf(i)
	}
	s.mu.Unlock()
	if err := s.commit(); err != nil {
		s.logger.Error("sandbox state not saved", "err", err)
	}
}
