// Package sandbox is a payment provider SANDBOX for development and tests: a
// simulation of Stripe's API v1 (PaymentIntents, refunds, and the Charges API that
// runs started before PaymentIntents still use) that is at least as strict as
// Stripe documents it about idempotency. The first request with a key whose
// execution began has its status and body saved, 5xx included, and every later
// request with the key gets that saved answer (Stripe's "Idempotent requests"); a
// request with the key while the first runs gets 409, another body 400; keys are
// pruned after KeyTTL (Stripe: 24 hours) and may be at most 255 characters. A
// PaymentIntent succeeds at most once and reads back consistently by ID; test
// cards that need 3-D Secure leave it requires_action until /sandbox/3ds/{id}
// completes or fails the authentication; every change raises an event, delivered
// as Stripe delivers signed webhooks (see Webhooks); search finds objects only
// after SearchDelay, like Stripe's eventually consistent search. It declines by card token and injects the faults that make outcomes
// unknown (see Faults). Stripe's refund failure test card makes refunds that
// succeed, then fail after RefundFailAfter (see refundFails). It keeps its ledger
// in memory and lists it, so a test can count charges per key and per order;
// opened on a state file (Open), it keeps it across restarts as a provider does.
package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// knownPaymentMethod reports a payment method the sandbox has ("" for none):
// Stripe's test PaymentMethods and tokens (pm_card_visa, tok_visa, ...). Stripe
// answers any other with 400 resource_missing, quoting it.
func knownPaymentMethod(pm string) bool {
	return pm == "" || strings.HasPrefix(pm, "pm_card_") || strings.HasPrefix(pm, "tok_")
}

// declined reports the card tokens that the sandbox declines, as Stripe's test
// tokens are.
func declined(token string) bool {
	switch token {
	case "pm_card_chargeDeclined", "pm_card_visa_chargeDeclined", "tok_chargeDeclined",
		"pm_card_chargeDeclinedInsufficientFunds":
		return true
	}
	return false
}

// needsAuthentication reports the test cards that ask for 3-D Secure on every
// payment, as Stripe's do: the confirm leaves the intent requires_action.
func needsAuthentication(pm string) bool {
	switch pm {
	case "pm_card_authenticationRequired", "pm_card_threeDSecure2Required", "tok_threeDSecure2Required",
		"pm_card_authenticationRequiredChargeDeclinedInsufficientFunds":
		return true
	}
	return false
}

// declinedAfterAuthentication reports the test card declined once authenticated.
func declinedAfterAuthentication(pm string) bool {
	return pm == "pm_card_authenticationRequiredChargeDeclinedInsufficientFunds"
}

// Options configure a sandbox.
type Options struct {
	Faults Faults
	// KeyTTL is how long a key's saved answer is kept; 0 means 24 hours.
	KeyTTL time.Duration
	// SearchDelay is how long a new charge or intent stays invisible to search.
	SearchDelay time.Duration
	// RefundFailAfter is how long a refund of the refund failure test cards
	// lasts before it fails; 0 means 30 seconds.
	RefundFailAfter time.Duration
}

// stored is the saved result of the first request with an idempotency key.
type stored struct {
	params  string
	done    bool
	status  int
	body    []byte
	created time.Time
	// saving: the answer is not on disk yet, so it is not given to a retry.
	saving bool
}

// Server is the sandbox.
type Server struct {
	logger       *slog.Logger
	opts         Options
	mu           sync.Mutex
	keys         map[string]*stored
	charges      []*Charge
	refunds      []*Refund
	intents      []*Intent
	disputes     []*Dispute
	faults       Faults
	unauthorized time.Time // 401 until then
	rateLimited  time.Time // 429 until then
	limited      int       // requests answered 429
	// requests counts POSTs per idempotency key, answered or not.
	requests map[string]int
	webhooks Webhooks
	stats    WebhookStats
	events   [][]byte // raised so far, oldest first (at most maxEvents)
	// perSecond counts the API requests that arrived in each second (unix
	// time), as Stripe's rate limit counts them; the last hour is kept.
	perSecond map[int64]int
	// paying is the intents' creates and confirms as they arrived, by order
	// (metadata order_id): whose turns of the account's budget they were.
	paying    []OrderCall
	closed    chan struct{}
	closeOnce sync.Once
	// deliveries are the webhook deliveries not yet done, by ID; outbox those
	// raised since the last commit, not yet started.
	deliveries map[string]*delivery
	outbox     []*delivery
	// failures are the timers of refunds that are to fail; failing counts
	// those that fired and may still be saving the state, which Close waits for.
	failures []*time.Timer
	failing  sync.WaitGroup
	// store keeps the state in a file (nil: in memory only); version numbers
	// its snapshots.
	store   *store
	version uint64
}

// New returns a sandbox that keeps its state in memory (Open keeps it in a file).
func New(logger *slog.Logger, o Options) *Server {
	if o.KeyTTL <= 0 {
		o.KeyTTL = 24 * time.Hour
	}
	if o.RefundFailAfter <= 0 {
		o.RefundFailAfter = 30 * time.Second
	}
	s := &Server{logger: logger, opts: o, keys: map[string]*stored{}, requests: map[string]int{}, perSecond: map[int64]int{},
		closed: make(chan struct{}), deliveries: map[string]*delivery{}}
	s.SetFaults(o.Faults)
	return s
}

// Handler returns the sandbox's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/payment_intents", s.createIntent)
	mux.HandleFunc("GET /v1/payment_intents", s.listIntents)
	mux.HandleFunc("GET /v1/payment_intents/search", s.searchIntents)
	mux.HandleFunc("GET /v1/payment_intents/{id}", s.retrieveIntent)
	mux.HandleFunc("POST /v1/payment_intents/{id}/confirm", s.confirmIntent)
	mux.HandleFunc("POST /v1/payment_intents/{id}/cancel", s.cancelIntent)
	mux.HandleFunc("POST /v1/refunds", s.createRefund)
	mux.HandleFunc("GET /v1/refunds", s.listRefunds)
	mux.HandleFunc("POST /v1/charges", s.createCharge)
	mux.HandleFunc("GET /v1/charges", s.listCharges)
	mux.HandleFunc("GET /v1/charges/search", s.searchCharges)
	mux.HandleFunc("GET /v1/events", s.listEvents)
	mux.HandleFunc("GET /v1/disputes", s.listDisputes)
	mux.HandleFunc("POST /sandbox/disputes", s.openDispute)
	mux.HandleFunc("POST /sandbox/disputes/{id}/close", s.closeDispute)
	mux.HandleFunc("GET /sandbox/3ds/{id}", s.authenticationPage)
	mux.HandleFunc("POST /sandbox/3ds/{id}", s.authenticate)
	mux.HandleFunc("GET /sandbox/webhooks", s.getWebhooks)
	mux.HandleFunc("PUT /sandbox/webhooks", s.putWebhooks)
	mux.HandleFunc("GET /sandbox/faults", s.getFaults)
	mux.HandleFunc("PUT /sandbox/faults", s.putFaults)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			s.arrived(time.Now())
		}
		mux.ServeHTTP(w, r)
	})
}

// keptSeconds bounds the per-second counts.
const keptSeconds = 3600

func (s *Server) arrived(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := at.Unix()
	s.perSecond[sec]++
	if len(s.perSecond) > keptSeconds {
		for k := range s.perSecond {
			if k <= sec-keptSeconds {
				delete(s.perSecond, k)
			}
		}
	}
}

// MostInWindow is the most API requests that arrived within any window of
// seconds whole seconds, since from (over the last hour at most).
func (s *Server) MostInWindow(from time.Time, seconds int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	most := 0
	for start := from.Unix(); start <= time.Now().Unix(); start++ {
		n := 0
		for sec := start; sec < start+int64(seconds); sec++ {
			n += s.perSecond[sec]
		}
		most = max(most, n)
	}
	return most
}

// SetSearchDelay changes how long new objects stay invisible to search.
func (s *Server) SetSearchDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.SearchDelay = d
}

// searchDelay is the current SearchDelay.
func (s *Server) searchDelay() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.SearchDelay
}

// SetFaults replaces the injected faults.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
	s.unauthorized = time.Now().Add(time.Duration(f.UnauthorizedMS) * time.Millisecond)
	s.rateLimited = time.Now().Add(time.Duration(f.RateLimitedMS) * time.Millisecond)
}

// RateLimited returns how many requests were answered 429.
func (s *Server) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// Prune forgets every saved answer, as the provider does after its key TTL.
func (s *Server) Prune() {
	s.mu.Lock()
	clear(s.keys)
	s.mu.Unlock()
	if err := s.commit(); err != nil {
		s.logger.Error("sandbox state not saved", "err", err)
	}
}

// Refunds returns every refund made.
func (s *Server) Refunds() []Refund {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Refund, 0, len(s.refunds))
	for _, re := range s.refunds {
		out = append(out, *re)
	}
	return out
}

// ChargesForOrder returns the charges made for an order (metadata order_id), at once:
// the test's view, not the eventually consistent search.
func (s *Server) ChargesForOrder(orderID string) []Charge {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Charge
	for _, c := range s.charges {
		if c.Metadata["order_id"] == orderID {
			out = append(out, *c)
		}
	}
	return out
}

// OrderCall is a create or confirm of an order's intent, as it arrived.
type OrderCall struct {
	At    time.Time
	Order string
}

// keptOrderCalls bounds the calls kept by order.
const keptOrderCalls = 100000

// recordOrderCall records a create or confirm for orderID arriving now. The caller holds mu.
func (s *Server) recordOrderCall(orderID string) {
	if len(s.paying) >= keptOrderCalls {
		s.paying = s.paying[:copy(s.paying, s.paying[keptOrderCalls/2:])]
	}
	s.paying = append(s.paying, OrderCall{At: time.Now(), Order: orderID})
}

// OrderCalls returns the intents' creates and confirms that arrived since from,
// oldest first: how the account's requests went to which orders.
func (s *Server) OrderCalls(from time.Time) []OrderCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []OrderCall
	for _, c := range s.paying {
		if !c.At.Before(from) {
			out = append(out, c)
		}
	}
	return out
}

// Requests returns how many requests arrived with an idempotency key.
func (s *Server) Requests(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[key]
}

// InFlight returns how many keyed requests are being processed right now.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, rec := range s.keys {
		if !rec.done {
			n++
		}
	}
	return n
}

// Charges returns the charges made with an idempotency key ("" for all).
func (s *Server) Charges(key string) []Charge {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Charge
	for _, c := range s.charges {
		if key == "" || c.IdempotencyKey == key {
			out = append(out, *c)
		}
	}
	return out
}

// decodeControl reads the JSON body of a control endpoint (4 KiB at most, no
// unknown fields) into v, or answers 400.
func decodeControl(w http.ResponseWriter, r *http.Request, what string, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", what+": "+err.Error())
		return false
	}
	return true
}

// nonNil makes an empty list encode as [], as Stripe's do.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

func errorBody(typ, code, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg}}
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, errorBody(typ, code, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
