package sandbox

import (
	"net/http"
	"time"
)

// Dispute is the sandbox's dispute object: the cardholder's bank contesting a
// charge.
type Dispute struct {
	ID            string `json:"id"`
	Object        string `json:"object"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	Charge        string `json:"charge"`
	PaymentIntent string `json:"payment_intent,omitempty"`
	Reason        string `json:"reason"`
	Status        string `json:"status"`
	Created       int64  `json:"created"`
}

// Open reports the statuses of a dispute not yet decided.
func (d Dispute) Open() bool {
	switch d.Status {
	case "warning_needs_response", "warning_under_review", "needs_response", "under_review":
		return true
	}
	return false
}

// openDispute opens a dispute on a charge, as a cardholder's bank would
// (POST /sandbox/disputes with charge): the charge shows disputed, and
// charge.dispute.created is raised.
func (s *Server) openDispute(w http.ResponseWriter, r *http.Request) {
	if !form(w, r) {
		return
	}
	s.mu.Lock()
	c := s.refundable(r.PostForm.Get("charge"), "")
	if c == nil {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "invalid_request_error", "resource_missing", "No such charge: '"+r.PostForm.Get("charge")+"'")
		return
	}
	reason := r.PostForm.Get("reason")
	if reason == "" {
		reason = "fraudulent"
	}
	d := &Dispute{ID: newID("dp"), Object: "dispute", Amount: c.Amount - c.AmountRefunded, Currency: c.Currency, Charge: c.ID,
		PaymentIntent: c.PaymentIntent, Reason: reason, Status: "needs_response", Created: time.Now().Unix()}
	c.Disputed = true
	s.disputes = append(s.disputes, d)
	s.emit("charge.dispute.created", *d)
	cp := *d
	s.mu.Unlock()
	if s.committed(w, nil) {
		writeJSON(w, http.StatusOK, cp)
	}
}

// closeDispute decides a dispute (POST /sandbox/disputes/{id}/close with
// outcome won or lost) and raises charge.dispute.closed.
func (s *Server) closeDispute(w http.ResponseWriter, r *http.Request) {
	if !form(w, r) {
		return
	}
	outcome := r.PostForm.Get("outcome")
	if outcome != "won" && outcome != "lost" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "outcome must be won or lost")
		return
	}
	s.mu.Lock()
	for _, d := range s.disputes {
		if d.ID == r.PathValue("id") {
			d.Status = outcome
			s.emit("charge.dispute.closed", *d)
			cp := *d
			s.mu.Unlock()
			if s.committed(w, nil) {
				writeJSON(w, http.StatusOK, cp)
			}
			return
		}
	}
	s.mu.Unlock()
	writeError(w, http.StatusNotFound, "invalid_request_error", "resource_missing", "No such dispute: '"+r.PathValue("id")+"'")
}

// listDisputes lists disputes as Stripe does (see paginate), by charge or
// payment_intent.
func (s *Server) listDisputes(w http.ResponseWriter, r *http.Request) {
	if !s.gate(w, "") {
		return
	}
	q := r.URL.Query()
	charge, intent := q.Get("charge"), q.Get("payment_intent")
	s.mu.Lock()
	var out []Dispute
	for _, d := range s.disputes {
		if (charge == "" || d.Charge == charge) && (intent == "" || d.PaymentIntent == intent) {
			out = append(out, *d)
		}
	}
	s.mu.Unlock()
	paginate(w, r, "/v1/disputes", out, func(d Dispute) (string, int64) { return d.ID, d.Created })
}

// disputed reports whether the charge has a dispute not yet decided; the caller
// holds s.mu.
func (s *Server) disputed(chargeID string) bool {
	for _, d := range s.disputes {
		if d.Charge == chargeID && d.Open() {
			return true
		}
	}
	return false
}
