// Package carrier is a small fake of a parcel carrier's booking API, as carriers
// that take an Idempotency-Key offer it: the same key and body answer the first
// booking again, the same key with another body is refused, and a key whose first
// request still runs answers 409. It is the outside service the shipment kind
// books through, in the example's tests and its local run.
package carrier

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Booking is what the carrier answers for a booked parcel.
type Booking struct {
	ID        string `json:"id"`
	Reference string `json:"reference"`
	Address   string `json:"address"`
	Grams     int    `json:"weight_grams"`
}

// Server is the carrier: its bookings, kept in memory.
type Server struct {
	delay time.Duration

	mu       sync.Mutex
	byKey    map[string]*answer
	bookings []Booking
	requests int // well-formed booking requests, whatever their answer
}

type answer struct {
	body    []byte // the request's, to tell another request under the same key
	done    bool
	booking Booking
}

// New is a carrier that takes delay to book a parcel (a slow carrier).
func New(delay time.Duration) *Server {
	return &Server{delay: delay, byKey: map[string]*answer{}}
}

// Bookings is every booking made, once each.
func (s *Server) Bookings() []Booking {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Booking(nil), s.bookings...)
}

// Requests is how many well-formed booking requests the carrier has taken in,
// answered again or refused included: a test waits on it to know that a
// booking is under way.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Handler is the carrier's API: POST /v1/bookings.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/bookings", s.book)
	return mux
}

func (s *Server) book(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	var b bytes.Buffer
	if _, err := b.ReadFrom(http.MaxBytesReader(w, r.Body, 4096)); err != nil || key == "" || len(key) > 255 {
		http.Error(w, "want a body of at most 4 KiB and an Idempotency-Key", http.StatusBadRequest)
		return
	}
	var want Booking
	if err := json.Unmarshal(b.Bytes(), &want); err != nil || want.Reference == "" || want.Grams <= 0 {
		http.Error(w, "want reference, address and a positive weight_grams", http.StatusBadRequest)
		return
	}
	a, first := s.claim(key, b.Bytes())
	switch {
	case !bytes.Equal(a.body, b.Bytes()):
		http.Error(w, "this Idempotency-Key was used with another request", http.StatusUnprocessableEntity)
		return
	case !first && !a.done:
		http.Error(w, "a request with this Idempotency-Key is in progress", http.StatusConflict)
		return
	case first:
		time.Sleep(s.delay) // the carrier's own work: a worker can die meanwhile
		s.finish(a, want)
	}
	s.mu.Lock()
	out := a.booking
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// claim is key's answer, and whether this request is the first to use key.
func (s *Server) claim(key string, body []byte) (*answer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if a, ok := s.byKey[key]; ok {
		return a, false
	}
	a := &answer{body: body}
	s.byKey[key] = a
	return a, true
}

func (s *Server) finish(a *answer, want Booking) {
	var id [8]byte
	_, _ = rand.Read(id[:])
	want.ID = "bk_" + hex.EncodeToString(id[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	a.booking, a.done = want, true
	s.bookings = append(s.bookings, want)
}
