package client

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Problem is an error the API answered (RFC 9457), with the answer's Request-Id.
// Its Kind is the stable part of its type (docs/problems/README.md).
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Field    string `json:"field,omitempty"`
	Instance string `json:"instance,omitempty"`
	// RequestID names the request to whoever runs the API.
	RequestID string `json:"-"`
	// RetryAfter is what the API asked a retry to wait (0: nothing said).
	RetryAfter time.Duration `json:"-"`
}

// The kinds a caller may act on.
const (
	KindKeyReused     = "idempotency-key-reused"
	KindInProgress    = "request-in-progress"
	KindNotFound      = "not-found"
	KindNotCancelable = "not-cancellable"
	// KindNotRefundable: the order is not PAID or PARTIALLY_REFUNDED; nothing was
	// sent to the payment provider.
	KindNotRefundable = "order-not-refundable"
	KindQuotaExceeded = "quota-exceeded"
	KindUnavailable   = "unavailable"
	KindUnauthorized  = "unauthorized"
	KindInvalidBody   = "invalid-body"
)

// Kind is the type's last segment: "idempotency-key-reused".
func (p *Problem) Kind() string {
	i := strings.LastIndexAny(p.Type, "/#")
	return p.Type[i+1:]
}

func (p *Problem) Error() string {
	s := fmt.Sprintf("orderflow: %d %s", p.Status, p.Kind())
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	if p.RequestID != "" {
		s += " (request " + p.RequestID + ")"
	}
	return s
}

// Retryable reports whether the same request, with the same key, may succeed
// later: a request in progress, a spent budget, an unavailable dependency, a
// proxy's or the API's own failure. 400, 401, 404, 413, 415, 422 and a 409
// other than request-in-progress (not cancellable, order not refundable) never do.
func (p *Problem) Retryable() bool {
	switch p.Status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	case http.StatusConflict:
		return p.Kind() == KindInProgress
	}
	return false
}
