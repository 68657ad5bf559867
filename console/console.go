// Package console is the operator console: server-rendered pages over the
// stores an operator asks about (orders, their timelines, dead letters,
// findings), behind an operator token and a signed session. It shows what the
// worker's operator commands print, never a card token, a payload key or a
// token.
package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/refundstore"
)

// Orders is the orders table as the console reads it (orderstore.Store).
type Orders interface {
	Browse(ctx context.Context, p orderstore.Page) ([]orderstore.Located, string, error)
	Locate(ctx context.Context, id string, workflowIDs []string) ([]orderstore.Located, error)
}

// Payments are an order's provider calls (ledger.Store).
type Payments interface {
	OfOrder(ctx context.Context, orderID string) ([]ledger.Line, error)
}

// Refunds are an order's refund requests (refundstore.Store).
type Refunds interface {
	ListByOrder(ctx context.Context, tenant, orderID string, limit int, cursor string) ([]refundstore.Row, string, error)
}

// Keys are the HTTP idempotency keys (idempotency.Store): which workflow a key
// was claimed for, if its row is still held.
type Keys interface {
	Lookup(ctx context.Context, tenant, key string) (string, bool, error)
}

// Findings are the reconciler's findings (reconcile.Store).
type Findings interface {
	List(ctx context.Context, f reconcile.Filter) ([]reconcile.Finding, error)
	Acknowledge(ctx context.Context, ids []int64, by, note string) ([]reconcile.Ack, error)
}

// Letters are the dead letters (KafkaLetters on the dead-letter topic).
type Letters interface {
	// List describes at most limit letters, with whom each speaks for; more
	// says some were left.
	List(ctx context.Context, limit int) (letters []consumer.LetterInfo, more bool, err error)
	// Show reads one letter and opens its value.
	Show(ctx context.Context, partition int, offset int64) (info consumer.LetterInfo, orig kafka.Message, whole bool, err error)
	// Redrive re-publishes the letters (all, or those sel picks).
	Redrive(ctx context.Context, sel []consumer.Selector, dryRun bool) (consumer.RedriveSummary, error)
}

// Customers open the customer IDs orders hold, sealed under each customer's key
// (custkeys.Store): personal.Erased once the customer is erased, a plain ID (an
// order placed before IDs were sealed) as it is.
type Customers interface {
	Shown(ctx context.Context, tenant, value string) (string, error)
}

// Stores are what the pages read and act on.
type Stores struct {
	Orders    Orders
	Payments  Payments
	Refunds   Refunds
	Keys      Keys
	Findings  Findings
	Letters   Letters
	Customers Customers
}

// Options are the console's credentials and links.
type Options struct {
	// Tokens are the operator tokens the login form accepts (16 characters at
	// least); the session key is derived from them, so changing them ends every
	// session.
	Tokens []string
	// TemporalUI is Temporal's Web UI (TEMPORAL_UI_URL); "" for no workflow link.
	TemporalUI string
	Namespace  string
	// Now is the clock; nil for time.Now.
	Now func() time.Time
}

// Console is the console's handler.
type Console struct {
	stores   Stores
	opts     Options
	sessions *sessions
	pages    map[string]*template.Template
	logger   *slog.Logger
	mux      *http.ServeMux
}

// New returns the console on stores, or an error for a missing store or an
// unusable token.
func New(stores Stores, o Options, logger *slog.Logger) (*Console, error) {
	if stores.Orders == nil || stores.Payments == nil || stores.Refunds == nil || stores.Keys == nil ||
		stores.Findings == nil || stores.Letters == nil || stores.Customers == nil {
		return nil, errors.New("console: every store is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s, err := newSessions(o.Tokens, o.Now)
	if err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{stores: stores, opts: o, sessions: s, pages: pages, logger: logger, mux: http.NewServeMux()}
	c.routes()
	return c, nil
}

func (c *Console) routes() {
	c.mux.HandleFunc("GET /login", c.loginPage)
	c.mux.HandleFunc("POST /login", c.login)
	c.mux.HandleFunc("POST /logout", c.guard(c.logout))
	c.mux.HandleFunc("GET /{$}", c.guard(func(w http.ResponseWriter, r *http.Request, _ session) {
		http.Redirect(w, r, "/orders", http.StatusSeeOther)
	}))
	c.mux.HandleFunc("GET /orders", c.guard(c.ordersPage))
	c.mux.HandleFunc("GET /orders/{id}", c.guard(c.orderPage))
	c.mux.HandleFunc("GET /dlq", c.guard(c.lettersPage))
	c.mux.HandleFunc("GET /dlq/{ref}", c.guard(c.letterPage))
	c.mux.HandleFunc("POST /dlq/redrive", c.guard(c.redrive))
	c.mux.HandleFunc("GET /findings", c.guard(c.findingsPage))
	c.mux.HandleFunc("POST /findings/{id}/ack", c.guard(c.ack))
	c.mux.HandleFunc("/", c.guard(func(w http.ResponseWriter, r *http.Request, s session) {
		c.fail(w, r, s, http.StatusNotFound, "no such page")
	}))
}

// maxBody bounds every request body: the forms hold a few short fields.
const maxBody = 16 << 10

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Nothing here runs script or is framed, and no page is cached or leaks its
	// URL (an order ID, a letter) to the Web UI a link opens.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	c.mux.ServeHTTP(w, r)
}

// render writes page with data, or a 500 if the template fails: into a buffer
// first, so a failure never sends half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	var b bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&b, "layout", data); err != nil {
		c.logger.ErrorContext(r.Context(), "console page failed", "page", page, "err", err)
		http.Error(w, "the page failed to render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// view is what every page's layout reads beside the page's own data.
type view struct {
	Title  string
	CSRF   string // "" when not logged in: no navigation
	Error  string
	Notice string
	Data   any
}

// show renders a page of a logged-in operator.
func (c *Console) show(w http.ResponseWriter, r *http.Request, s session, page, title string, data any) {
	c.render(w, r, http.StatusOK, page, view{Title: title, CSRF: c.sessions.csrf(s), Data: data})
}

// fail renders an error page; a store's error is logged, not shown.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s session, status int, msg string) {
	c.render(w, r, status, "error", view{Title: http.StatusText(status), CSRF: c.sessions.csrf(s), Error: msg})
}

// failed logs err and renders a 500.
func (c *Console) failed(w http.ResponseWriter, r *http.Request, s session, what string, err error) {
	c.logger.ErrorContext(r.Context(), "console read failed", "what", what, "err", fmt.Errorf("%s: %w", what, err))
	c.fail(w, r, s, http.StatusInternalServerError, what+" failed; the worker's log says why")
}
