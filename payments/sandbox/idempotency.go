package sandbox

import (
	"encoding/json"
	"net/http"
	"time"
)

// idempotent runs do at most once per Idempotency-Key and replays its saved answer,
// whatever it was, until the key is pruned. Same key with other parameters: 400;
// same key while the first is running: 409. do calls wait where the injected
// latency belongs (a confirm, once its intent shows "processing").
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, params, op string, do func(key string, wait func()) (int, any)) {
	if !s.gate(w, op) {
		return
	}
	key := r.Header.Get("Idempotency-Key")
	rec, ok := s.claim(w, key, r.URL.Path+"?"+params)
	if !ok {
		return
	}
	latency, failBefore, after := s.takeFaults(op)
	if failBefore {
		body := s.save(rec, http.StatusInternalServerError, errorBody("api_error", "sandbox_fault", "injected failure before processing"))
		if s.committed(w, rec) {
			writeRaw(w, http.StatusInternalServerError, body)
		}
		return
	}
	// The provider keeps working when the client gives up: that is what makes a
	// timeout ambiguous.
	status, v := do(key, func() { time.Sleep(latency) })
	if after == failResponse {
		// Stripe saves what it answered, a 500 included.
		status, v = http.StatusInternalServerError, errorBody("api_error", "sandbox_fault", "injected failure after processing")
	}
	body := s.save(rec, status, v)
	if !s.committed(w, rec) {
		return
	}
	if after == dropConnection {
		s.logger.Info("sandbox fault: processed, dropping the connection", "path", r.URL.Path)
		drop(w)
		return
	}
	if after == failResponse {
		s.logger.Info("sandbox fault: processed, answering (and saving) 500", "path", r.URL.Path)
	}
	writeRaw(w, status, body)
}

// claim takes an idempotency key for a request with params, or answers what the
// key's saved answer says (a replay, 400 for other parameters, 409 while the first
// runs); rec is nil for a request without a key.
func (s *Server) claim(w http.ResponseWriter, key, params string) (rec *stored, ok bool) {
	if len(key) > 255 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "idempotency_key_too_long", "Idempotency-Key is longer than 255 characters")
		return nil, false
	}
	if key == "" {
		return nil, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[key]++
	rec = s.keys[key]
	if rec != nil && rec.done && time.Since(rec.created) > s.opts.KeyTTL {
		delete(s.keys, key) // pruned: the key is new again
		rec = nil
	}
	switch {
	case rec != nil && rec.params != params:
		writeError(w, http.StatusBadRequest, "idempotency_error", "idempotency_key_reused",
			"Keys for idempotent requests can only be used with the same parameters they were first used with.")
		return nil, false
	case rec != nil && (!rec.done || rec.saving):
		writeError(w, http.StatusConflict, "idempotency_error", "idempotency_key_in_use",
			"There is currently another in-progress request using this Idempotency-Key.")
		return nil, false
	case rec != nil:
		w.Header().Set("Idempotent-Replayed", "true")
		writeRaw(w, rec.status, rec.body)
		return nil, false
	}
	rec = &stored{params: params, created: time.Now()}
	s.keys[key] = rec
	return rec, true
}

// committed commits the request's changes before it is answered, or answers 500:
// a change that is not on disk is not acknowledged. From then on the key's saved
// answer (rec, nil without a key) is replayed.
func (s *Server) committed(w http.ResponseWriter, rec *stored) bool {
	err := s.commit()
	if rec != nil {
		s.mu.Lock()
		rec.saving = false
		s.mu.Unlock()
	}
	if err != nil {
		s.logger.Error("sandbox state not saved", "err", err)
		writeError(w, http.StatusInternalServerError, "api_error", "state_not_saved", "the sandbox could not save its state")
		return false
	}
	return true
}

// drop closes the client's connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// save records the answer of a request whose execution began.
func (s *Server) save(rec *stored, status int, v any) []byte {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"type":"api_error","message":"encode"}}`)
	}
	if rec != nil {
		s.mu.Lock()
		rec.done, rec.status, rec.body, rec.saving = true, status, body, true
		s.mu.Unlock()
	}
	return body
}
