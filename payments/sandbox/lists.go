package sandbox

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
)

// paginate answers a list request as Stripe does: objects (given oldest first)
// newest first, limit per page (1 to 100, default 10), starting_after the last one
// of the page before, created[gte|gt|lte|lt] in Unix seconds, and has_more. key
// names an object and its creation time.
func paginate[T any](w http.ResponseWriter, r *http.Request, path string, objects []T, key func(T) (string, int64)) {
	p, msg := newPage(r.URL.Query())
	if msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", msg)
		return
	}
	objects = slices.Clone(objects)
	slices.Reverse(objects)
	out := []T{}
	more := false
	for _, o := range objects {
		id, created := key(o)
		ok, stop := p.take(id, created)
		if stop {
			more = true
			break
		}
		if ok {
			out = append(out, o)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": out, "has_more": more, "url": path})
}

// page is a list request's window over objects listed newest first.
type page struct {
	limit        int
	after        string // starting_after: objects up to and including it are skipped
	seen         bool
	gte, lte     int64
	taken        int
	hasGte, hasL bool
}

// newPage reads limit, starting_after and created[gte|gt|lte|lt]; a message says
// why the request is invalid.
func newPage(q url.Values) (*page, string) {
	p := &page{limit: 10, after: q.Get("starting_after")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return nil, "Invalid limit: must be an integer between 1 and 100"
		}
		p.limit = n
	}
	bound := func(name string, adjust int64) (int64, bool, string) {
		v := q.Get("created[" + name + "]")
		if v == "" {
			return 0, false, ""
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false, "Invalid created[" + name + "]: must be a Unix timestamp"
		}
		return n + adjust, true, ""
	}
	var msg string
	var gt, lt int64
	var hasGt, hasLt bool
	if p.gte, p.hasGte, msg = bound("gte", 0); msg != "" {
		return nil, msg
	}
	if gt, hasGt, msg = bound("gt", 1); msg != "" {
		return nil, msg
	}
	if p.lte, p.hasL, msg = bound("lte", 0); msg != "" {
		return nil, msg
	}
	if lt, hasLt, msg = bound("lt", -1); msg != "" {
		return nil, msg
	}
	if hasGt && (!p.hasGte || gt > p.gte) {
		p.gte, p.hasGte = gt, true
	}
	if hasLt && (!p.hasL || lt < p.lte) {
		p.lte, p.hasL = lt, true
	}
	return p, ""
}

// take says whether the object belongs on the page, and stop once the page is full
// and another one would have followed.
func (p *page) take(id string, created int64) (ok, stop bool) {
	if p.after != "" && !p.seen {
		p.seen = id == p.after
		return false, false
	}
	if (p.hasGte && created < p.gte) || (p.hasL && created > p.lte) {
		return false, false
	}
	if p.taken == p.limit {
		return false, true
	}
	p.taken++
	return true, false
}
