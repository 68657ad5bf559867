package sandbox

import (
	"net/http"
	"time"
)

// Faults are injected into the next requests. Counters go down by one per request
// they affect.
type Faults struct {
	// Only limits the faults to one operation: "create" (an intent), "confirm",
	// "cancel", "refund" or "charge" (the Charges API); "retrieve" delays reads of
	// an intent by LatencyMS (for Slow of them), and nothing else. Empty: latency and
	// FailBefore apply to every write, FailAfter and DropAfter to the writes that
	// move money (confirm and charge).
	Only string `json:"only,omitempty"`
	// LatencyMS delays writes, after the key is claimed; a confirm holds its
	// intent in "processing" meanwhile.
	LatencyMS int `json:"latency_ms"`
	// Slow limits LatencyMS to the next N requests; 0 delays every request.
	Slow int `json:"slow"`
	// FailBefore answers the next N writes 500 without acting; the endpoint had
	// begun, so the 500 is saved and replayed to every retry of the key.
	FailBefore int `json:"fail_before"`
	// FailAfter acts on the next N writes, then answers 500, and saves the 500:
	// every retry of the key gets it, although the card was charged.
	FailAfter int `json:"fail_after"`
	// DropAfter acts on the next N writes, saves the success, and drops the
	// connection unanswered.
	DropAfter int `json:"drop_after"`
	// Unavailable answers the next N requests 503 before the endpoint runs (a proxy
	// in front of it): nothing is saved, and a retry with the key runs anew. With
	// Only, it holds back that operation alone.
	Unavailable int `json:"unavailable"`
	// UnauthorizedMS answers every request 401 for this long after the faults are set
	// (a rotated secret): nothing is saved.
	UnauthorizedMS int `json:"unauthorized_ms"`
	// RateLimitedMS answers every request 429 (code rate_limit, as the provider
	// answers a burst over the account's limit) for this long after the faults
	// are set: nothing is saved.
	RateLimitedMS int `json:"rate_limited_ms"`
}

type failure int

const (
	noFault failure = iota
	failResponse
	dropConnection
)

// gate answers what is refused before the endpoint runs (nothing is saved): wrong
// credentials, and a proxy's 503.
func (s *Server) gate(w http.ResponseWriter, op string) bool {
	s.mu.Lock()
	unauthorized := time.Now().Before(s.unauthorized)
	limited := !unauthorized && time.Now().Before(s.rateLimited)
	if limited {
		s.limited++
	}
	unavailable := !unauthorized && !limited && s.faults.Unavailable > 0 && (s.faults.Only == "" || s.faults.Only == op)
	if unavailable {
		s.faults.Unavailable--
	}
	s.mu.Unlock()
	switch {
	case unauthorized:
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "api_key_expired", "Invalid API Key provided.")
		return false
	case limited:
		writeError(w, http.StatusTooManyRequests, "invalid_request_error", "rate_limit", "Request rate limit exceeded. Please retry after a short wait.")
		return false
	case unavailable:
		writeError(w, http.StatusServiceUnavailable, "api_error", "sandbox_fault", "service unavailable (not saved)")
		return false
	}
	return true
}

// readLatency consumes the latency of one intent read, when the faults target
// reads.
func (s *Server) readLatency() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.Only != "retrieve" {
		return 0
	}
	latency := time.Duration(s.faults.LatencyMS) * time.Millisecond
	if s.faults.Slow > 0 {
		if s.faults.Slow--; s.faults.Slow == 0 {
			s.faults.LatencyMS = 0
		}
	}
	return latency
}

// movesMoney reports the operations that charge a card.
func movesMoney(op string) bool { return op == "confirm" || op == "charge" }

// takeFaults consumes the faults that apply to one request of op.
func (s *Server) takeFaults(op string) (latency time.Duration, before bool, after failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.Only != "" && s.faults.Only != op {
		return 0, false, noFault
	}
	latency = time.Duration(s.faults.LatencyMS) * time.Millisecond
	if s.faults.Slow > 0 {
		if s.faults.Slow--; s.faults.Slow == 0 {
			s.faults.LatencyMS = 0
		}
	}
	if s.faults.FailBefore > 0 {
		s.faults.FailBefore--
		return latency, true, noFault
	}
	acts := s.faults.Only == op || movesMoney(op)
	if acts && s.faults.FailAfter > 0 {
		s.faults.FailAfter--
		return latency, false, failResponse
	}
	if acts && s.faults.DropAfter > 0 {
		s.faults.DropAfter--
		return latency, false, dropConnection
	}
	return latency, false, noFault
}

func (s *Server) getFaults(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	f := s.faults
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, f)
}

func (s *Server) putFaults(w http.ResponseWriter, r *http.Request) {
	var f Faults
	if !decodeControl(w, r, "faults", &f) {
		return
	}
	s.SetFaults(f)
	writeJSON(w, http.StatusOK, f)
}
