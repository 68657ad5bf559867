package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/wire"
)

// Refunds requests and reads refunds of orders (*refunds.Service): the refund
// routes reach the refund kind only through it.
type Refunds interface {
	// Decode reads and validates a refund's POST body, of the path's order;
	// every error is a *ingress.FieldError.
	Decode(body []byte, orderID string) (ingress.Request, error)
	Request(ctx context.Context, tenant, key string, req ingress.Request, wait time.Duration) intake.Result
	Get(ctx context.Context, tenant, id string) (wire.Refund, error)
	List(ctx context.Context, tenant, orderID string, limit int, cursor string) ([]wire.Refund, string, error)
}

func (a *api) createRefund(w http.ResponseWriter, r *http.Request) {
	orderID, p := pathID(r)
	if p != nil {
		writeProblem(w, r, *p)
		return
	}
	a.keyed(w, r, "/v1/refunds/", func(body []byte) (ingress.Request, error) { return a.Refunds.Decode(body, orderID) },
		a.Refunds.Request)
}

func (a *api) getRefund(w http.ResponseWriter, r *http.Request) {
	id, p := pathID(r)
	if p != nil {
		writeProblem(w, r, *p)
		return
	}
	v, err := a.Refunds.Get(r.Context(), tenantOf(r.Context()), id)
	switch {
	case err == nil:
		resp, _ := json.Marshal(v)
		writeJSON(w, http.StatusOK, resp)
	case errors.Is(err, intake.ErrNotFound):
		writeProblem(w, r, newProblem(kindNotFound, "no such refund"))
	default:
		a.unavailable(w, r, err)
	}
}

func (a *api) listRefunds(w http.ResponseWriter, r *http.Request) {
	orderID, p := pathID(r)
	if p != nil {
		writeProblem(w, r, *p)
		return
	}
	limit, cursor, p := page(r)
	if p != nil {
		writeProblem(w, r, *p)
		return
	}
	views, next, err := a.Refunds.List(r.Context(), tenantOf(r.Context()), orderID, limit, cursor)
	switch {
	case errors.Is(err, intake.ErrNotFound):
		writeProblem(w, r, newProblem(kindNotFound, "no such order"))
		return
	case errors.Is(err, intake.ErrBadCursor):
		writeProblem(w, r, fieldProblem(kindInvalidQuery, "cursor", "not a cursor from a previous page"))
		return
	case err != nil:
		a.unavailable(w, r, err)
		return
	}
	resp, _ := json.Marshal(struct {
		Data       []wire.Refund `json:"data"`
		HasMore    bool          `json:"has_more"`
		NextCursor string        `json:"next_cursor,omitempty"`
	}{views, next != "", next})
	writeJSON(w, http.StatusOK, resp)
}
