package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
)

// kind is the stable identity of an error; its problem type URI is the problem
// base (PROBLEM_BASE_URL) and the kind.
type kind string

// DefaultProblemBase is the problem types' base unless one is configured.
const DefaultProblemBase = "https://orderflow.dev/problems/"

const (
	kindUnauthorized     kind = "unauthorized"
	kindMissingKey       kind = "idempotency-key-missing"
	kindMalformedKey     kind = "idempotency-key-malformed"
	kindInvalidBody      kind = "invalid-body"
	kindBodyTooLarge     kind = "body-too-large"
	kindUnsupportedMedia kind = "unsupported-media-type"
	kindInvalidQuery     kind = "invalid-query"
	kindInvalidPath      kind = "invalid-path"
	kindKeyReused        kind = "idempotency-key-reused"
	kindInProgress       kind = "request-in-progress"
	kindNotFound         kind = "not-found"
	kindMethodNotAllowed kind = "method-not-allowed"
	kindNotCancellable   kind = "not-cancellable"
	kindNotRefundable    kind = "order-not-refundable"
	kindUnavailable      kind = "unavailable"
	kindQuotaExceeded    kind = "quota-exceeded"
	kindInternal         kind = "internal"
)

// status maps every kind to its HTTP status and title, in one place.
func (k kind) status() (int, string) {
	switch k {
	case kindUnauthorized:
		return http.StatusUnauthorized, "Missing or invalid API key"
	case kindMissingKey:
		return http.StatusBadRequest, "Idempotency-Key required"
	case kindMalformedKey:
		return http.StatusBadRequest, "Malformed Idempotency-Key"
	case kindInvalidBody:
		return http.StatusBadRequest, "Invalid request body"
	case kindBodyTooLarge:
		return http.StatusRequestEntityTooLarge, "Request body too large"
	case kindUnsupportedMedia:
		return http.StatusUnsupportedMediaType, "Unsupported media type"
	case kindInvalidQuery:
		return http.StatusBadRequest, "Invalid query parameter"
	case kindInvalidPath:
		return http.StatusBadRequest, "Invalid path parameter"
	case kindKeyReused:
		return http.StatusUnprocessableEntity, "Idempotency-Key reused with a different request"
	case kindInProgress:
		return http.StatusConflict, "A request with this Idempotency-Key is in progress"
	case kindNotFound:
		return http.StatusNotFound, "Not found"
	case kindMethodNotAllowed:
		return http.StatusMethodNotAllowed, "Method not allowed"
	case kindNotCancellable:
		return http.StatusConflict, "Order can no longer be cancelled"
	case kindNotRefundable:
		return http.StatusConflict, "Order cannot be refunded"
	case kindUnavailable:
		return http.StatusServiceUnavailable, "Service temporarily unavailable"
	case kindQuotaExceeded:
		return http.StatusTooManyRequests, "Too many requests for this tenant"
	}
	return http.StatusInternalServerError, "Internal error"
}

// problem is an RFC 9457 problem detail.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Field  string `json:"field,omitempty"`
	// Instance names this occurrence: the request's Request-Id, as a URN.
	Instance   string `json:"instance,omitempty"`
	retryAfter int
}

func newProblem(k kind, detail string) problem {
	status, title := k.status()
	return problem{Type: string(k), Title: title, Status: status, Detail: detail}
}

type problemBaseKey struct{}

// problemTypes makes base the prefix of every problem type a request's answer
// carries (writeProblem's default when empty).
func problemTypes(base string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), problemBaseKey{}, base)))
		})
	}
}

// Kinds are every problem type the API answers, for their documentation.
func Kinds() []string {
	return []string{string(kindUnauthorized), string(kindMissingKey), string(kindMalformedKey), string(kindInvalidBody),
		string(kindBodyTooLarge), string(kindUnsupportedMedia), string(kindInvalidQuery), string(kindInvalidPath),
		string(kindKeyReused), string(kindInProgress), string(kindNotFound), string(kindMethodNotAllowed),
		string(kindNotCancellable), string(kindNotRefundable), string(kindUnavailable), string(kindQuotaExceeded), string(kindInternal)}
}

func writeProblem(w http.ResponseWriter, r *http.Request, p problem) {
	base, _ := r.Context().Value(problemBaseKey{}).(string)
	if base == "" {
		base = DefaultProblemBase
	}
	p.Type = base + p.Type
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	if id := h.Get(requestIDHeader); id != "" {
		p.Instance = "urn:orderflow:request:" + id
	}
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
