package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/orderflow/orderflow/ingress"
	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/ingress/wire"
	"github.com/orderflow/orderflow/payments/provider"
	"github.com/orderflow/orderflow/platform/identity"
)

type api struct {
	Deps
	m *metrics
}

func (a *api) createOrder(w http.ResponseWriter, r *http.Request) {
	a.keyed(w, r, "/v1/orders/", a.Intake.Decode, a.Intake.Place)
}

// A submit starts the workflow of a decoded request under its Idempotency-Key.
type submit func(ctx context.Context, tenant, key string, req ingress.Request, wait time.Duration) intake.Result

// keyed answers a POST that starts a workflow with an Idempotency-Key, for every
// kind alike: the key's checks, the body's, Prefer: wait, and the answer of each
// outcome; location is where the started workflow is read, before its ID.
func (a *api) keyed(w http.ResponseWriter, r *http.Request, location string, decode func([]byte) (ingress.Request, error), place submit) {
	key, err := ParseIdempotencyKey(r.Header.Values("Idempotency-Key"))
	switch {
	case errors.Is(err, errKeyMissing):
		writeProblem(w, r, newProblem(kindMissingKey, err.Error()))
		return
	case err != nil:
		writeProblem(w, r, newProblem(kindMalformedKey, err.Error()))
		return
	}
	req, p := a.decodeBody(w, r, decode)
	if p != nil {
		writeProblem(w, r, *p)
		return
	}
	wait := time.Duration(parsePreferWait(r.Header.Values("Prefer"))) * time.Second
	ctx := r.Context()
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = untilDrain(ctx)
		defer cancel()
	}
	out := place(ctx, tenantOf(ctx), key, req, wait)
	if !out.KeyExpires.IsZero() && (out.Kind == intake.Created || out.Kind == intake.Replayed) {
		// When this key's record goes (IDEMPOTENCY_TTL): until then a retry is
		// replayed; after it, the workflow the key made answers (docs/retention.md).
		w.Header().Set("Idempotency-Key-Expires", out.KeyExpires.UTC().Format(http.TimeFormat))
	}
	if wait > 0 && out.Kind == intake.Created {
		// RFC 7240: the wait was honoured (the workflow finished in it, or it ran
		// out); a replay answers what was stored, without waiting.
		w.Header().Set("Preference-Applied", fmt.Sprintf("wait=%d", int(wait.Seconds())))
	}
	a.answer(w, r, location, out)
}

// answer writes the outcome of a keyed POST.
func (a *api) answer(w http.ResponseWriter, r *http.Request, location string, out intake.Result) {
	var refused *ingress.Refusal
	if (out.Kind == intake.Created || out.Kind == intake.Replayed) && a.Personal != nil {
		body, err := a.Personal.ShownIn(r.Context(), tenantOf(r.Context()), out.Body)
		if err != nil {
			a.unavailable(w, r, &intake.UnavailableError{What: "customer keys", Err: err})
			return
		}
		out.Body = body
	}
	switch out.Kind {
	case intake.Created:
		if out.StartTook > 0 {
			a.m.startDuration.Observe(out.StartTook.Seconds())
		}
		w.Header().Set("Location", location+out.ID)
		writeJSON(w, out.Status, out.Body)
	case intake.Replayed:
		a.m.replays.Inc()
		w.Header().Set("Idempotent-Replayed", "true")
		w.Header().Set("Location", location+out.ID)
		writeJSON(w, out.Status, out.Body)
	case intake.Mismatch:
		a.m.conflicts.WithLabelValues("mismatch").Inc()
		writeProblem(w, r, newProblem(kindKeyReused, "this Idempotency-Key was used with a different request body; use a new key"))
	case intake.InFlight:
		a.m.conflicts.WithLabelValues("in_flight").Inc()
		writeProblem(w, r, withRetry(newProblem(kindInProgress, "retry after the first request completes"), int(out.RetryAfter.Seconds()+0.999)))
	case intake.Refused:
		if errors.As(out.Err, &refused) {
			writeProblem(w, r, newProblem(kind(refused.Problem), refused.Detail))
			return
		}
		a.unavailable(w, r, out.Err)
	default:
		a.unavailable(w, r, out.Err)
	}
}

// decodeBody reads the body of a POST and decodes it with decode.
func (a *api) decodeBody(w http.ResponseWriter, r *http.Request, decode func([]byte) (ingress.Request, error)) (ingress.Request, *problem) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			p := newProblem(kindUnsupportedMedia, "send Content-Type: application/json")
			return nil, &p
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.MaxBodyBytes))
	if err != nil {
		p := newProblem(kindInvalidBody, "cannot read the body")
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			p = newProblem(kindBodyTooLarge, "the body is larger than "+strconv.FormatInt(a.MaxBodyBytes, 10)+" bytes")
		}
		return nil, &p
	}
	req, err := decode(body)
	if err != nil {
		p := newProblem(kindInvalidBody, err.Error())
		var fe *ingress.FieldError
		if errors.As(err, &fe) {
			p.Field = fe.Field
		}
		return req, &p
	}
	return req, nil
}

func (a *api) getOrder(w http.ResponseWriter, r *http.Request) {
	id, p := pathID(r)
	if p != nil {
		writeProblem(w, r, *p)
		return
	}
	tenant := tenantOf(r.Context())
	// The order's next action is read from the provider within its tenant's
	// share of the budget, so one tenant's polling waits on its own share.
	view, err := a.Intake.Get(provider.WithTenant(r.Context(), tenant), tenant, id)
	a.writeOrder(w, r, view, err)
}

func (a *api) cancelOrder(w http.ResponseWriter, r *http.Request) {
	id, p := pathID(r)
	if p != nil {
		writeProblem(w, r, *p)
		return
	}
	view, err := a.Intake.Cancel(r.Context(), tenantOf(r.Context()), id)
	a.writeOrder(w, r, view, err)
}

// pathID is the {id} of the route, if Postgres could take it.
func pathID(r *http.Request) (string, *problem) {
	id := chi.URLParam(r, "id")
	if msg := checkParam(id, maxParamLen); msg != "" {
		p := fieldProblem(kindInvalidPath, "id", msg)
		return "", &p
	}
	return id, nil
}

// maxParamLen bounds every identifier in a path or query: order IDs are 30
// characters, customer IDs and idempotency keys at most identity.MaxKeyLen.
const maxParamLen = identity.MaxKeyLen

// checkParam says why Postgres or Temporal would refuse v ("" when they would
// not): invalid UTF-8, NUL or other control characters, or more than max characters.
func checkParam(v string, max int) string {
	switch {
	case !utf8.ValidString(v):
		return "not valid UTF-8"
	case utf8.RuneCountInString(v) > max:
		return "longer than " + strconv.Itoa(max) + " characters"
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			return "contains a control character"
		}
	}
	return ""
}

// writeOrder answers with the order, or maps the service's error to its problem:
// a refusal (an order past cancelling) names its own.
func (a *api) writeOrder(w http.ResponseWriter, r *http.Request, view wire.Order, err error) {
	var refused *ingress.Refusal
	switch {
	case err == nil:
		resp, _ := json.Marshal(view)
		writeJSON(w, http.StatusOK, resp)
	case errors.Is(err, intake.ErrNotFound):
		writeProblem(w, r, newProblem(kindNotFound, "no such order"))
	case errors.As(err, &refused):
		writeProblem(w, r, newProblem(kind(refused.Problem), refused.Detail))
	default:
		a.unavailable(w, r, err)
	}
}

func (a *api) listOrders(w http.ResponseWriter, r *http.Request) {
	f, p := listFilter(r)
	if p != nil {
		writeProblem(w, r, *p)
		return
	}
	views, next, err := a.Intake.List(r.Context(), tenantOf(r.Context()), f)
	var fe *ingress.FieldError
	switch {
	case errors.Is(err, intake.ErrBadCursor):
		writeProblem(w, r, fieldProblem(kindInvalidQuery, "cursor", "not a cursor from a previous page"))
		return
	case errors.As(err, &fe): // a value the kind does not know (a status)
		writeProblem(w, r, fieldProblem(kindInvalidQuery, fe.Field, fe.Message))
		return
	}
	if err != nil {
		a.unavailable(w, r, err)
		return
	}
	resp, _ := json.Marshal(struct {
		Data       []wire.Order `json:"data"`
		HasMore    bool         `json:"has_more"`
		NextCursor string       `json:"next_cursor,omitempty"`
	}{views, next != "", next})
	writeJSON(w, http.StatusOK, resp)
}

// page reads a list's limit (1 to 100, 20 by default) and cursor.
func page(r *http.Request) (int, string, *problem) {
	q := r.URL.Query()
	for _, name := range []string{"cursor", "limit"} {
		if msg := checkParam(q.Get(name), maxParamLen); msg != "" {
			p := fieldProblem(kindInvalidQuery, name, msg)
			return 0, "", &p
		}
	}
	limit := 20
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			p := fieldProblem(kindInvalidQuery, "limit", "must be an integer from 1 to 100")
			return 0, "", &p
		}
		limit = n
	}
	return limit, q.Get("cursor"), nil
}

// listFilter reads the list's query; every parameter is checked before any
// query, the values only the kind knows (a status) by the kind.
func listFilter(r *http.Request) (intake.Filter, *problem) {
	q := r.URL.Query()
	for _, name := range []string{"customer_id", "status", "idempotency_key", "event_id"} {
		if msg := checkParam(q.Get(name), maxParamLen); msg != "" {
			p := fieldProblem(kindInvalidQuery, name, msg)
			return intake.Filter{}, &p
		}
	}
	limit, cursor, p := page(r)
	if p != nil {
		return intake.Filter{}, p
	}
	return intake.Filter{CustomerID: q.Get("customer_id"), Status: q.Get("status"), Limit: limit, Cursor: cursor,
		IdempotencyKey: q.Get("idempotency_key"), EventID: q.Get("event_id")}, nil
}

func (a *api) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	what := "a dependency"
	var ue *intake.UnavailableError
	if errors.As(err, &ue) {
		what = ue.What
	}
	a.Logger.ErrorContext(r.Context(), what+" failed", "request_id", middleware.GetReqID(r.Context()), "err", err)
	detail := what + " is unavailable; retry later"
	if (r.Method == http.MethodPost || r.Method == http.MethodDelete) && r.Header.Get("Idempotency-Key") != "" {
		detail = what + " is unavailable; retry with the same Idempotency-Key"
	}
	writeProblem(w, r, withRetry(newProblem(kindUnavailable, detail), 2))
}

func fieldProblem(k kind, field, detail string) problem {
	p := newProblem(k, field+": "+detail)
	p.Field = field
	return p
}
