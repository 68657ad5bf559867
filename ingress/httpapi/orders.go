package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/orderflow/orderflow/ingress/idempotency"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/internal/order"
	"github.com/orderflow/orderflow/internal/orderstore"
	"github.com/orderflow/orderflow/workflows"
)

type api struct {
	Deps
	m *metrics
}

// startBudget bounds the critical section of a POST (claim, start, record, store the
// response). It runs detached from the client's connection, so a client that hangs
// up cannot leave it half done.
const startBudget = 10 * time.Second

func (a *api) createOrder(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r.Context())
	key, err := ParseIdempotencyKey(r.Header.Values("Idempotency-Key"))
	switch {
	case errors.Is(err, errKeyMissing):
		writeProblem(w, newProblem(kindMissingKey, err.Error()))
		return
	case err != nil:
		writeProblem(w, newProblem(kindMalformedKey, err.Error()))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeProblem(w, newProblem(kindUnsupportedMedia, "send Content-Type: application/json"))
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeProblem(w, newProblem(kindBodyTooLarge, "the body is larger than "+strconv.FormatInt(a.MaxBodyBytes, 10)+" bytes"))
			return
		}
		writeProblem(w, newProblem(kindInvalidBody, "cannot read the body"))
		return
	}
	req, err := intake.DecodeRequest(body)
	if err != nil {
		p := newProblem(kindInvalidBody, err.Error())
		var fe *intake.FieldError
		if errors.As(err, &fe) {
			p.Field = fe.Field
		}
		writeProblem(w, p)
		return
	}

	wait := parsePreferWait(r.Header.Values("Prefer"))
	workflowID := order.WorkflowID(tenant, key)
	lease := time.Duration(wait)*time.Second + startBudget
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), lease)
	defer cancel()

	outcome, rec, err := a.Idempotency.Claim(ctx, tenant, key, intake.Fingerprint(req), workflowID, lease)
	if err != nil {
		a.unavailable(w, r, "idempotency store", err)
		return
	}
	location := "/v1/orders/" + order.IDFor(rec.WorkflowID)
	switch outcome {
	case idempotency.Replay:
		a.m.replays.Inc()
		w.Header().Set("Idempotent-Replayed", "true")
		w.Header().Set("Location", location)
		writeJSON(w, rec.Status, rec.Body)
		return
	case idempotency.Mismatch:
		a.m.conflicts.WithLabelValues("mismatch").Inc()
		writeProblem(w, newProblem(kindKeyReused, "this Idempotency-Key was used with a different request body; use a new key"))
		return
	case idempotency.InFlight:
		a.m.conflicts.WithLabelValues("in_flight").Inc()
		writeProblem(w, withRetry(newProblem(kindInProgress, "retry after the first request completes"), int(rec.RetryAfter.Seconds()+0.999)))
		return
	}

	o := req.Order(tenant, workflowID)
	began := time.Now()
	run, err := a.Starter.Start(ctx, o)
	a.m.startDuration.Observe(time.Since(began).Seconds())
	var view orderstore.View
	if err == nil {
		// The read model has the order before the client hears of it.
		view, err = a.Orders.Record(ctx, o)
	}
	if err != nil {
		if rerr := a.Idempotency.Release(ctx, tenant, key); rerr != nil {
			a.Logger.WarnContext(ctx, "release idempotency key", "err", rerr)
		}
		a.unavailable(w, r, "workflow start", err)
		return
	}

	status := http.StatusAccepted
	if wait > 0 {
		wctx, wcancel := context.WithTimeout(r.Context(), time.Duration(wait)*time.Second)
		err := run.Get(wctx, nil)
		wcancel()
		if wctx.Err() == nil || err == nil {
			status = http.StatusCreated // finished, successfully or not: the order says which
		}
		if view, err = a.Orders.Get(ctx, tenant, o.ID); err != nil {
			a.unavailable(w, r, "order read", err)
			return
		}
	}
	resp, _ := json.Marshal(view)
	if err := a.Idempotency.Complete(ctx, tenant, key, status, resp); err != nil {
		// The retry re-claims after the lease and finds the same workflow.
		a.Logger.WarnContext(ctx, "store idempotent response", "err", err)
	}
	w.Header().Set("Location", location)
	writeJSON(w, status, resp)
}

func (a *api) getOrder(w http.ResponseWriter, r *http.Request) {
	view, err := a.Orders.Get(r.Context(), tenantOf(r.Context()), chi.URLParam(r, "id"))
	if errors.Is(err, orderstore.ErrNotFound) {
		writeProblem(w, newProblem(kindNotFound, "no such order"))
		return
	}
	if err != nil {
		a.unavailable(w, r, "order read", err)
		return
	}
	resp, _ := json.Marshal(view)
	writeJSON(w, http.StatusOK, resp)
}

func (a *api) listOrders(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := orderstore.Filter{CustomerID: q.Get("customer_id"), Status: order.Status(q.Get("status")), Limit: 20, Cursor: q.Get("cursor")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			writeProblem(w, fieldProblem(kindInvalidQuery, "limit", "must be an integer from 1 to 100"))
			return
		}
		f.Limit = n
	}
	switch f.Status {
	case "", order.StatusPending, order.StatusPaymentPending, order.StatusPaid, order.StatusPaymentDeclined,
		order.StatusCancelled, order.StatusFailed:
	default:
		writeProblem(w, fieldProblem(kindInvalidQuery, "status", "unknown status"))
		return
	}
	views, next, err := a.Orders.List(r.Context(), tenantOf(r.Context()), f)
	if errors.Is(err, orderstore.ErrBadCursor) {
		writeProblem(w, fieldProblem(kindInvalidQuery, "cursor", "not a cursor from a previous page"))
		return
	}
	if err != nil {
		a.unavailable(w, r, "order list", err)
		return
	}
	resp, _ := json.Marshal(struct {
		Data       []orderstore.View `json:"data"`
		NextCursor string            `json:"next_cursor,omitempty"`
	}{views, next})
	writeJSON(w, http.StatusOK, resp)
}

func (a *api) cancelOrder(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r.Context())
	view, err := a.Orders.Get(r.Context(), tenant, chi.URLParam(r, "id"))
	if errors.Is(err, orderstore.ErrNotFound) {
		writeProblem(w, newProblem(kindNotFound, "no such order"))
		return
	}
	if err != nil {
		a.unavailable(w, r, "order read", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	h, err := a.Updater.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: view.WorkflowID(), UpdateName: workflows.UpdateCancel, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var res workflows.OrderResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	var appErr *temporal.ApplicationError
	var notFound *serviceerror.NotFound
	switch {
	case err == nil && res.Status != order.StatusCancelled:
		// Accepted while the charge was in flight, but the order settled otherwise
		// (declined, failed): nothing to cancel.
		writeProblem(w, newProblem(kindNotCancellable, "the order is "+string(res.Status)))
		return
	case err == nil:
	case errors.As(err, &appErr) && appErr.Type() == workflows.ErrNotCancellable,
		errors.As(err, &notFound): // the workflow has closed
		now, gerr := a.Orders.Get(r.Context(), tenant, view.ID)
		if gerr == nil && now.Status == order.StatusCancelled {
			break // cancelling twice answers the same
		}
		if gerr == nil {
			view = now
		}
		writeProblem(w, newProblem(kindNotCancellable, "the order is "+string(view.Status)))
		return
	default:
		a.unavailable(w, r, "cancel update", err)
		return
	}
	view, err = a.Orders.Get(r.Context(), tenant, view.ID)
	if err != nil {
		a.unavailable(w, r, "order read", err)
		return
	}
	resp, _ := json.Marshal(view)
	writeJSON(w, http.StatusOK, resp)
}

func (a *api) unavailable(w http.ResponseWriter, r *http.Request, what string, err error) {
	a.Logger.ErrorContext(r.Context(), what+" failed", "request_id", middleware.GetReqID(r.Context()), "err", err)
	writeProblem(w, withRetry(newProblem(kindUnavailable, what+" is unavailable; retry with the same Idempotency-Key"), 2))
}

func fieldProblem(k kind, field, detail string) problem {
	p := newProblem(k, field+": "+detail)
	p.Field = field
	return p
}
