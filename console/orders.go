package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow/orderflow/tenants"

	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/platform/redact"
)

const (
	// pageSize and maxPage bound a page of orders.
	pageSize, maxPage = 50, 100
	// maxShown bounds the refunds and findings read of one order.
	maxShown = 200
	// maxRef bounds an order ID, a tenant, a cursor in a URL.
	maxRef = 200
)

// ordersData is the orders page: the filter, the rows, the next page's link.
type ordersData struct {
	Tenant, Status string
	Statuses       []order.Status
	Orders         []orderstore.Located
	Next           string
}

func (c *Console) ordersPage(w http.ResponseWriter, r *http.Request, s session) {
	q := r.URL.Query()
	p := orderstore.Page{Tenant: strings.TrimSpace(q.Get("tenant")), Status: order.Status(q.Get("status")), Limit: pageSize, Cursor: q.Get("cursor")}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		p.Limit = min(n, maxPage)
	}
	switch {
	case p.Tenant != "" && (len(p.Tenant) > maxRef || !tenants.Valid(p.Tenant)):
		c.fail(w, r, s, http.StatusBadRequest, "not a tenant name")
		return
	case p.Status != "" && !p.Status.Valid():
		c.fail(w, r, s, http.StatusBadRequest, "not an order status")
		return
	case len(p.Cursor) > maxRef:
		c.fail(w, r, s, http.StatusBadRequest, "not a cursor of this page")
		return
	}
	found, next, err := c.stores.Orders.Browse(r.Context(), p)
	if errors.Is(err, orderstore.ErrBadCursor) {
		c.fail(w, r, s, http.StatusBadRequest, "not a cursor of this page")
		return
	}
	if err != nil {
		c.failed(w, r, s, "reading the orders", err)
		return
	}
	d := ordersData{Tenant: p.Tenant, Status: string(p.Status), Statuses: order.Statuses, Orders: found}
	if next != "" {
		v := url.Values{"cursor": {next}, "limit": {strconv.Itoa(p.Limit)}}
		if p.Tenant != "" {
			v.Set("tenant", p.Tenant)
		}
		if p.Status != "" {
			v.Set("status", string(p.Status))
		}
		d.Next = "/orders?" + v.Encode()
	}
	c.show(w, r, s, "orders", "Orders", d)
}

// entry is one line of an order's timeline.
type entry struct {
	At     time.Time
	What   string
	Detail string
}

// timeline is the order page: the order, where it came from, its timeline.
type timeline struct {
	Order       orderstore.Located
	Request     string
	WorkflowURL string
	Entries     []entry
	Findings    []reconcile.Finding
}

func (c *Console) orderPage(w http.ResponseWriter, r *http.Request, s session) {
	id := r.PathValue("id")
	if id == "" || len(id) > maxRef {
		c.fail(w, r, s, http.StatusNotFound, "no such order")
		return
	}
	found, err := c.stores.Orders.Locate(r.Context(), id, nil)
	if err != nil {
		c.failed(w, r, s, "reading the order", err)
		return
	}
	if len(found) == 0 {
		c.fail(w, r, s, http.StatusNotFound, "no order with ID "+id)
		return
	}
	t, err := c.timelineOf(r, found[0])
	if err != nil {
		c.failed(w, r, s, "reading the order's timeline", err)
		return
	}
	c.show(w, r, s, "order", "Order "+id, t)
}

// timelineOf reads what each owning store holds of the order, ordered by time.
func (c *Console) timelineOf(r *http.Request, o orderstore.Located) (timeline, error) {
	ctx := r.Context()
	t := timeline{Order: o, WorkflowURL: c.workflowURL(o.WorkflowID)}
	t.Order.Failure = redact.Secrets(o.Failure)
	customer, err := c.stores.Customers.Shown(ctx, o.Tenant, o.CustomerID)
	if err != nil {
		return t, fmt.Errorf("open the order's customer: %w", err)
	}
	t.Order.CustomerID = customer // never the sealed value
	req, err := c.request(r, o)
	if err != nil {
		return t, err
	}
	t.Request = req
	t.Entries = append(t.Entries, entry{o.CreatedAt, "order recorded", req})
	lines, err := c.stores.Payments.OfOrder(ctx, o.ID)
	if err != nil {
		return t, err
	}
	for _, p := range lines {
		t.Entries = append(t.Entries, entry{p.CreatedAt, "payment: " + string(p.Kind) + " " + string(p.Status),
			money(p.Amount, p.Currency) + " " + dash(p.ProviderID) + ", last changed " + stamp(p.UpdatedAt)})
	}
	refunds, _, err := c.stores.Refunds.ListByOrder(ctx, o.Tenant, o.ID, maxShown, "")
	if err != nil {
		return t, err
	}
	for _, f := range refunds {
		t.Entries = append(t.Entries, entry{f.CreatedAt, "refund " + f.ID + ": " + string(f.Status),
			money(f.Amount, f.Currency) + " of " + strconv.FormatInt(f.AmountRequested, 10) + " asked, " + string(f.Reason) + " " + redact.Secrets(f.Failure)})
	}
	if t.Findings, err = c.stores.Findings.List(ctx, reconcile.Filter{OrderID: o.ID, Limit: maxShown}); err != nil {
		return t, err
	}
	for _, f := range t.Findings {
		t.Entries = append(t.Entries, entry{f.FoundAt, "finding " + strconv.FormatInt(f.ID, 10) + ": " + f.Kind + ", " + f.Action, redact.Secrets(f.Detail)})
	}
	t.Entries = append(t.Entries, entry{o.UpdatedAt, "last change: " + string(o.Status), ""})
	slices.SortStableFunc(t.Entries, func(a, b entry) int { return a.At.Compare(b.At) })
	return t, nil
}

// request says what made the order, from its workflow ID: an HTTP
// Idempotency-Key (and whether its row is still held), an eventId or a
// CloudEvent.
func (c *Console) request(r *http.Request, o orderstore.Located) (string, error) {
	rest, ok := strings.CutPrefix(o.WorkflowID, order.Kind+":"+o.Tenant+":")
	if !ok {
		return "workflow " + o.WorkflowID, nil
	}
	if ce, ok := strings.CutPrefix(rest, "ce:"); ok {
		return "a CloudEvent (source and id digest " + ce + ")", nil
	}
	key, ok := strings.CutPrefix(rest, "http:")
	if !ok {
		return "an event on the requests topic, eventId " + unescape(rest), nil
	}
	key = unescape(key)
	wf, held, err := c.stores.Keys.Lookup(r.Context(), o.Tenant, key)
	switch {
	case err != nil:
		return "", err
	case held && wf == o.WorkflowID:
		return "POST /v1/orders, Idempotency-Key " + key + " (its key row is held)", nil
	default:
		return "POST /v1/orders, Idempotency-Key " + key + " (its key row is gone, past its retention)", nil
	}
}

// unescape undoes the %XX of a key in a workflow ID (identity.WorkflowID).
func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// workflowURL links a workflow in Temporal's Web UI; "" without one.
func (c *Console) workflowURL(workflowID string) string {
	if c.opts.TemporalUI == "" {
		return ""
	}
	return strings.TrimRight(c.opts.TemporalUI, "/") + "/namespaces/" + url.PathEscape(c.opts.Namespace) + "/workflows/" + url.PathEscape(workflowID)
}

func money(amount int64, currency string) string {
	return strconv.FormatInt(amount, 10) + " " + currency
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
