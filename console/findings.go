package console

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/redact"
)

const (
	// maxFindings bounds the open findings listed, oldest first.
	maxFindings = 200
	// maxBy and maxNote bound the acknowledge form's fields.
	maxBy, maxNote = 64, 500
)

type findingsData struct {
	Findings []reconcile.Finding
	Max      int
}

func (c *Console) findingsPage(w http.ResponseWriter, r *http.Request, s session) {
	found, err := c.stores.Findings.List(r.Context(), reconcile.Filter{Since: time.Time{}, Open: true, Limit: maxFindings})
	if err != nil {
		c.failed(w, r, s, "reading the findings", err)
		return
	}
	for i := range found {
		found[i].Detail = redact.Secrets(found[i].Detail)
	}
	c.show(w, r, s, "findings", "Open findings", findingsData{Findings: found, Max: maxFindings})
}

func (c *Console) ack(w http.ResponseWriter, r *http.Request, s session) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		c.fail(w, r, s, http.StatusNotFound, "no such finding")
		return
	}
	by, note := r.PostFormValue("by"), r.PostFormValue("note")
	switch {
	case len(by) > maxBy || len(note) > maxNote:
		c.fail(w, r, s, http.StatusBadRequest, "the name has at most 64 characters, the note 500")
		return
	case formValue(r, "by", maxBy) == "":
		c.fail(w, r, s, http.StatusBadRequest, "say who acknowledges: the name is required")
		return
	}
	acks, err := c.stores.Findings.Acknowledge(r.Context(), []int64{id}, formValue(r, "by", maxBy), formValue(r, "note", maxNote))
	var unknown *reconcile.UnknownFindingsError
	if errors.As(err, &unknown) {
		c.fail(w, r, s, http.StatusNotFound, "no finding "+strconv.FormatInt(id, 10))
		return
	}
	if err != nil {
		c.failed(w, r, s, "acknowledging the finding", err)
		return
	}
	already := len(acks) == 1 && acks[0].Already
	c.logger.InfoContext(r.Context(), "finding acknowledged", "operator", s.Operator, "finding", id,
		"by", formValue(r, "by", maxBy), "already", already)
	// After a POST, a GET: a reload does not post again.
	http.Redirect(w, r, "/findings", http.StatusSeeOther)
}
