package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/orderflow/orderflow/ingress/consumer"
	"github.com/orderflow/orderflow/orders/order"
	"github.com/orderflow/orderflow/orders/orderstore"
	"github.com/orderflow/orderflow/payments/ledger"
	"github.com/orderflow/orderflow/payments/reconcile"
	"github.com/orderflow/orderflow/payments/refund"
	"github.com/orderflow/orderflow/payments/refundstore"
	"github.com/orderflow/orderflow/platform/personal"
)

// Secrets planted in the fakes: none may reach a page or the log.
const (
	token       = "operator-token-0123456789abcdef"
	cardToken   = "pm_planted_card_4242"
	opaqueCard  = "opaque-card-secret-xyz"
	payloadKey  = "k1:cGxhbnRlZC1wYXlsb2FkLWtleS0wMTIzNDU2Nzg5YWI="
	paymentKey  = "order:acme:http:key-1:charge:planted-idempotency"
	orderID     = "ord_planted1"
	workflowID  = "order:acme:http:key-1"
	stuckStatus = order.StatusPaymentPending
)

type fakes struct {
	acked    []int64
	ackedBy  string
	redriven []consumer.Selector
	keys     string // what a real Letters would hold: never shown
	longID   string // a CloudEvent id the letter at 0:5 holds
	// customer is the order's customer ID as its row holds it ("" for a plain
	// cus_shown); key opens it unless erased.
	customer string
	key      personal.Key
	erased   bool
}

func (f *fakes) Browse(_ context.Context, p orderstore.Page) ([]orderstore.Located, string, error) {
	if p.Status != "" && p.Status != stuckStatus {
		return nil, "", nil
	}
	return []orderstore.Located{{Tenant: "acme", Row: row()}}, "next-cursor", nil
}

func row() orderstore.Row {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return orderstore.Row{ID: orderID, Status: stuckStatus, CustomerID: "cus_shown", Currency: "USD", Amount: 2598,
		WorkflowID: workflowID, CreatedAt: at, UpdatedAt: at.Add(time.Minute), Failure: "declined " + cardToken}
}

func (f *fakes) Locate(_ context.Context, id string, _ []string) ([]orderstore.Located, error) {
	if id != orderID {
		return nil, nil
	}
	r := row()
	if f.customer != "" {
		r.CustomerID = f.customer
	}
	return []orderstore.Located{{Tenant: "acme", Row: r}}, nil
}

// Shown opens a value sealed under f.key as custkeys.Store does.
func (f *fakes) Shown(_ context.Context, tenant, value string) (string, error) {
	if !personal.IsSealed(value) {
		return value, nil
	}
	if f.erased {
		return personal.Erased, nil
	}
	if tenant != f.key.Tenant {
		return "", errors.New("another tenant's key")
	}
	return f.key.Open(value)
}

func (f *fakes) OfOrder(context.Context, string) ([]ledger.Line, error) {
	return []ledger.Line{{Kind: "intent", Status: "pending", Amount: 2598, Currency: "USD", ProviderID: "pi_123",
		CreatedAt: row().CreatedAt.Add(time.Second)}}, nil
}

func (f *fakes) ListByOrder(context.Context, string, string, int, string) ([]refundstore.Row, string, error) {
	return []refundstore.Row{{Refund: refund.Refund{ID: "rfd_1"}, Key: paymentKey, Status: "FAILED", Amount: 100, AmountRequested: 100, Currency: "USD",
		Failure: "card " + cardToken + " refused", CreatedAt: row().CreatedAt.Add(2 * time.Second)}}, "", nil
}

func (f *fakes) Lookup(context.Context, string, string) (string, bool, error) {
	return workflowID, true, nil
}

func (f *fakes) List(_ context.Context, r reconcile.Filter) ([]reconcile.Finding, error) {
	out := []reconcile.Finding{{ID: 7, FoundAt: row().CreatedAt.Add(3 * time.Second), Kind: "stuck_payment", Action: "reported",
		OrderID: orderID, Tenant: "acme", Detail: "charged with " + cardToken}}
	if r.Open && len(f.acked) > 0 {
		return nil, nil
	}
	return out, nil
}

func (f *fakes) Acknowledge(_ context.Context, ids []int64, by, _ string) ([]reconcile.Ack, error) {
	if ids[0] != 7 {
		return nil, &reconcile.UnknownFindingsError{IDs: ids}
	}
	f.acked, f.ackedBy = append(f.acked, ids...), by
	return []reconcile.Ack{{ID: 7, AckedBy: by}}, nil
}

func letterInfo() consumer.LetterInfo {
	return consumer.LetterInfo{Partition: 0, Offset: 3, FromTopic: "orders.requested", Group: "g", Error: "unknown tenant newco", Sealed: true, Whole: true, Bytes: 99,
		Identity: consumer.Identity{ID: strings.Repeat("cd", 32), Tenant: "newco", Kind: "order", EventID: "evt-visible"}}
}

// longLetter is a CloudEvent letter whose id is f.longID.
func (f *fakes) longLetter() consumer.LetterInfo {
	li := consumer.LetterInfo{Partition: 0, Offset: 5, FromTopic: "orders.requested", Group: "g", Error: "ce_id: longer than 255 bytes " + f.longID,
		Sealed: true, Whole: true, Bytes: len(f.longID)}
	li.Identity = consumer.Identity{ID: strings.Repeat("ab", 32), Tenant: "newco", Kind: "order", EventID: f.longID, Source: "shop"}
	return li
}

func (f *fakes) Show(_ context.Context, p int, o int64) (consumer.LetterInfo, kafka.Message, bool, error) {
	if f.longID != "" && p == 0 && o == 5 {
		return f.longLetter(), kafka.Message{Value: []byte(orderJSON), Headers: []kafka.Header{{Key: "ce_id", Value: []byte(f.longID)}}}, true, nil
	}
	if p != 0 || o != 3 {
		return consumer.LetterInfo{}, kafka.Message{}, false, consumer.ErrNoLetter
	}
	value := `{"eventId":"evt-visible","tenant":"newco","order":{"customer_id":"cus_x","payment_method":"` + opaqueCard +
		`","note":"` + cardToken + `"}}`
	return letterInfo(), kafka.Message{Key: []byte("newco"), Value: []byte(value),
		Headers: []kafka.Header{{Key: "ce_id", Value: []byte("evt-visible")}, {Key: "card", Value: []byte(cardToken)}}}, true, nil
}

func (f *fakes) Redrive(_ context.Context, sel []consumer.Selector, _ bool) (consumer.RedriveSummary, error) {
	f.redriven = append(f.redriven, sel...)
	return consumer.RedriveSummary{Read: 1, Redriven: 1}, nil
}

// letters is the Letters half of the fakes (List collides with Findings').
type letters struct{ *fakes }

func (l letters) List(context.Context, int) ([]consumer.LetterInfo, bool, error) {
	out := []consumer.LetterInfo{letterInfo()}
	if l.longID != "" {
		out = append(out, l.longLetter())
	}
	return out, false, nil
}

const orderJSON = `{"eventId":"evt-visible","tenant":"newco","order":{}}`

type harness struct {
	c    *Console
	f    *fakes
	logs *bytes.Buffer
	now  time.Time
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{f: &fakes{keys: payloadKey}, logs: &bytes.Buffer{}, now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	st := Stores{Orders: h.f, Payments: h.f, Refunds: h.f, Keys: h.f, Findings: h.f, Letters: letters{h.f}, Customers: h.f}
	c, err := New(st, Options{Tokens: []string{"another-token-0123456789", token}, TemporalUI: "http://ui.test:8233", Namespace: "ns",
		Now: func() time.Time { return h.now }}, slog.New(slog.NewJSONHandler(h.logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

func (h *harness) do(method, target string, form url.Values, ck *http.Cookie) *httptest.ResponseRecorder {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if ck != nil {
		r.AddCookie(ck)
	}
	w := httptest.NewRecorder()
	h.c.ServeHTTP(w, r)
	return w
}

// login logs in with tok and returns the session cookie and a page's CSRF token.
func (h *harness) login(t *testing.T, tok string) (*http.Cookie, string) {
	t.Helper()
	w := h.do("POST", "/login", url.Values{"token": {tok}}, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("login: %d %s", w.Code, w.Body)
	}
	var ck *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == cookieName {
			ck = c
		}
	}
	if ck == nil {
		t.Fatal("login set no session cookie")
	}
	page := h.do("GET", "/findings", nil, ck)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page.Body.String())
	if m == nil {
		t.Fatalf("no CSRF token in the findings page:\n%s", page.Body)
	}
	return ck, m[1]
}

type route struct{ method, path string }

func guarded() []route {
	return []route{
		{"GET", "/"}, {"GET", "/orders"}, {"GET", "/orders?status=PAYMENT_PENDING"}, {"GET", "/orders/" + orderID},
		{"GET", "/dlq"}, {"GET", "/dlq/0:3"}, {"GET", "/findings"}, {"GET", "/nowhere"},
		{"POST", "/dlq/redrive"}, {"POST", "/findings/7/ack"}, {"POST", "/logout"},
	}
}

// Without a session, or with one forged, expired or signed under other tokens,
// a GET goes to the login page and a POST is a 401; neither shows data or acts.
func TestEveryRouteNeedsASession(t *testing.T) {
	h := newHarness(t)
	good, _ := h.login(t, token)
	other := newHarness(t)
	other.c.sessions, _ = newSessions([]string{"a-different-token-0123456789"}, other.c.opts.Now)
	foreign, _ := other.login(t, "a-different-token-0123456789")
	forged := *good
	forged.Value = strings.Replace(good.Value, "sha256:", "sha256:0", 1)
	cookies := map[string]*http.Cookie{"none": nil, "forged": &forged, "foreign": foreign,
		"garbage": {Name: cookieName, Value: "x.y.z.w"}}
	for name, ck := range cookies {
		for _, rt := range guarded() {
			w := h.do(rt.method, rt.path, url.Values{"event_id": {""}, "by": {"ana"}}, ck)
			h.refused(t, name, rt.method, rt.path, w)
		}
	}
	h.now = h.now.Add(sessionLife + time.Second)
	for _, rt := range guarded() {
		h.refused(t, "expired", rt.method, rt.path, h.do(rt.method, rt.path, url.Values{"by": {"ana"}}, good))
	}
	if len(h.f.acked) > 0 || len(h.f.redriven) > 0 {
		t.Fatalf("acted without a session: acked %v, redriven %v", h.f.acked, h.f.redriven)
	}
}

func (h *harness) refused(t *testing.T, name, method, path string, w *httptest.ResponseRecorder) {
	t.Helper()
	want := http.StatusSeeOther
	if method == "POST" {
		want = http.StatusUnauthorized
	}
	if w.Code != want || (want == http.StatusSeeOther && w.Header().Get("Location") != "/login") {
		t.Errorf("%s session: %s %s = %d (Location %q), want %d to /login", name, method, path, w.Code, w.Header().Get("Location"), want)
	}
	if strings.Contains(w.Body.String(), orderID) || strings.Contains(w.Body.String(), "unknown tenant") {
		t.Errorf("%s session: %s %s shows data:\n%s", name, method, path, w.Body)
	}
}

// A wrong token (or one too long) sets no cookie; a right one sets an HttpOnly,
// SameSite=Strict cookie, Secure behind TLS, holding no token.
func TestLogin(t *testing.T) {
	h := newHarness(t)
	for _, tok := range []string{"", "wrong-token-0123456789abcdef", token + "x", token[:len(token)-1], strings.Repeat("a", 600)} {
		w := h.do("POST", "/login", url.Values{"token": {tok}}, nil)
		if w.Code != http.StatusUnauthorized || len(w.Result().Cookies()) > 0 {
			t.Errorf("token %.20q: %d, cookies %v; want 401 and none", tok, w.Code, w.Result().Cookies())
		}
	}
	ck, _ := h.login(t, token)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || ck.MaxAge != int(sessionLife/time.Second) {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP, 8h", ck)
	}
	if strings.Contains(ck.Value, token) {
		t.Error("the cookie holds the token")
	}
	r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Forwarded-Proto", "https")
	w := httptest.NewRecorder()
	h.c.ServeHTTP(w, r)
	if cs := w.Result().Cookies(); len(cs) != 1 || !cs[0].Secure {
		t.Errorf("behind TLS, cookies %v; want one, Secure", cs)
	}
	if strings.Contains(h.logs.String(), token) {
		t.Error("the log holds the token")
	}
}

// A POST without its session's CSRF token is refused and does nothing.
func TestCSRF(t *testing.T) {
	h := newHarness(t)
	ck, csrf := h.login(t, token)
	_, otherCSRF := h.login(t, token) // another session of the same token
	for name, tok := range map[string]string{"missing": "", "wrong": "AAAA" + csrf[4:], "another session's": otherCSRF} {
		for _, path := range []string{"/findings/7/ack", "/dlq/redrive"} {
			w := h.do("POST", path, url.Values{"csrf": {tok}, "by": {"ana"}}, ck)
			if w.Code != http.StatusForbidden {
				t.Errorf("%s CSRF token: POST %s = %d, want 403", name, path, w.Code)
			}
		}
	}
	if len(h.f.acked) > 0 || len(h.f.redriven) > 0 {
		t.Fatalf("acted without a CSRF token: acked %v, redriven %v", h.f.acked, h.f.redriven)
	}
	if w := h.do("POST", "/findings/7/ack", url.Values{"csrf": {csrf}, "by": {"ana"}, "note": {"refunded by hand"}}, ck); w.Code != http.StatusSeeOther {
		t.Fatalf("ack with the CSRF token: %d %s", w.Code, w.Body)
	}
}

// Every page renders from the stores, and none shows a card token, a provider
// idempotency key, a payload key or a token planted in them.
func TestPagesRenderWithoutSecrets(t *testing.T) {
	h := newHarness(t)
	ck, _ := h.login(t, token)
	pages := map[string][]string{
		"/orders?status=PAYMENT_PENDING&tenant=acme": {orderID, "PAYMENT_PENDING", "2598 USD", "/orders?cursor=next-cursor"},
		"/orders/" + orderID: {"cus_shown", "Idempotency-Key key-1 (its key row is held)", "payment: intent pending", "pi_123",
			"refund rfd_1: FAILED", "finding 7: stuck_payment, reported", "http://ui.test:8233/namespaces/ns/workflows/order:acme:http:key-1"},
		"/dlq":      {"0:3", "unknown tenant newco", "orders.requested", "newco", "evt-visible"},
		"/dlq/0:3":  {"evt-visible", "ce_id", "[redacted]", "cus_…#", "unknown tenant newco"},
		"/findings": {"stuck_payment", orderID, `action="/findings/7/ack"`},
	}
	for path, wants := range pages {
		w := h.do("GET", path, nil, ck)
		body := w.Body.String()
		if w.Code != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", path, w.Code, body)
			continue
		}
		for _, want := range wants {
			want = strings.ReplaceAll(want, "&", "&amp;")
			if !strings.Contains(body, want) {
				t.Errorf("GET %s lacks %q:\n%s", path, want, body)
			}
		}
		for _, secret := range []string{cardToken, opaqueCard, paymentKey, payloadKey, token} {
			if strings.Contains(body, secret) {
				t.Errorf("GET %s shows the secret %q", path, secret)
			}
		}
	}
	for path, code := range map[string]int{"/orders?status=BOGUS": 400, "/orders?tenant=a%20b": 400, "/orders/ord_none": 404,
		"/dlq/0:4": 404, "/dlq/x": 400, "/orders?cursor=" + strings.Repeat("x", 300): 400} {
		if w := h.do("GET", path, nil, ck); w.Code != code {
			t.Errorf("GET %s: %d, want %d", path, w.Code, code)
		}
	}
}

// An acknowledgement needs a name; it and a redrive are logged with the token's
// digest, never the token, and showing a letter is logged.
func TestActionsAreLoggedByTokenDigest(t *testing.T) {
	h := newHarness(t)
	ck, csrf := h.login(t, token)
	if w := h.do("POST", "/findings/7/ack", url.Values{"csrf": {csrf}, "by": {"  "}}, ck); w.Code != http.StatusBadRequest {
		t.Errorf("ack without a name: %d, want 400", w.Code)
	}
	if w := h.do("POST", "/findings/7/ack", url.Values{"csrf": {csrf}, "by": {strings.Repeat("a", 65)}}, ck); w.Code != http.StatusBadRequest {
		t.Errorf("ack with a name too long: %d, want 400", w.Code)
	}
	if w := h.do("POST", "/findings/8/ack", url.Values{"csrf": {csrf}, "by": {"ana"}}, ck); w.Code != http.StatusNotFound {
		t.Errorf("ack of no finding: %d, want 404", w.Code)
	}
	if len(h.f.acked) > 0 {
		t.Fatalf("acknowledged %v on a refused form", h.f.acked)
	}
	if w := h.do("POST", "/findings/7/ack", url.Values{"csrf": {csrf}, "by": {"ana"}}, ck); w.Code != http.StatusSeeOther || h.f.ackedBy != "ana" {
		t.Fatalf("ack: %d, by %q", w.Code, h.f.ackedBy)
	}
	if body := h.do("GET", "/findings", nil, ck).Body.String(); !strings.Contains(body, "No open findings") {
		t.Errorf("the acknowledged finding is still listed:\n%s", body)
	}
	if w := h.do("POST", "/dlq/redrive", url.Values{"csrf": {csrf}, "event_id": {"evt-visible"}}, ck); w.Code != http.StatusBadRequest {
		t.Errorf("redrive by an eventId alone: %d, want 400", w.Code)
	}
	w := h.do("POST", "/dlq/redrive", url.Values{"csrf": {csrf}, "tenant": {"newco"}, "kind": {"order"}, "event_id": {"evt-visible"}}, ck)
	want := consumer.Selector{Tenant: "newco", Kind: "order", EventID: "evt-visible"}
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "redriven: 1") || len(h.f.redriven) != 1 || h.f.redriven[0] != want {
		t.Fatalf("redrive: %d, redriven %v\n%s", w.Code, h.f.redriven, w.Body)
	}
	h.do("GET", "/dlq/0:3", nil, ck)
	logs := h.logs.String()
	digest := operatorOf(sha256.Sum256([]byte(token)))
	for _, msg := range []string{"finding acknowledged", "dead letters redriven", "dead letter shown"} {
		if !regexp.MustCompile(`"msg":"` + msg + `".*"operator":"` + digest + `"`).MatchString(logs) {
			t.Errorf("no %q line by %s in the log:\n%s", msg, digest, logs)
		}
	}
	for _, secret := range []string{token, cardToken, opaqueCard} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

// A token under 16 characters, or none, is no console.
func TestNewRefusesWeakTokens(t *testing.T) {
	f := &fakes{}
	st := Stores{Orders: f, Payments: f, Refunds: f, Keys: f, Findings: f, Letters: letters{f}, Customers: f}
	for _, toks := range [][]string{nil, {"short"}, {token, "short"}} {
		if _, err := New(st, Options{Tokens: toks}, slog.Default()); err == nil {
			t.Errorf("tokens %q: a console", toks)
		}
	}
}

// A letter whose CloudEvent id is 10 KB: the list shows its first 64
// characters and a link to the letter, whose page shows it whole.
func TestLongFieldsAreCutInTheList(t *testing.T) {
	h := newHarness(t)
	h.f.longID = strings.Repeat("x", 10<<10)
	ck, _ := h.login(t, token)
	list := h.do("GET", "/dlq", nil, ck).Body.String()
	if strings.Contains(list, strings.Repeat("x", maxCut+1)) {
		t.Fatalf("the list holds the 10 KB id inline (%d bytes)", len(list))
	}
	if !strings.Contains(list, strings.Repeat("x", maxCut)+"…") || !strings.Contains(list, `href="/dlq/0:5"`) {
		t.Fatalf("the list lacks the cut id or the letter's link:\n%.2000s", list)
	}
	if len(list) > 8<<10 {
		t.Errorf("the list weighs %d bytes for two letters", len(list))
	}
	letter := h.do("GET", "/dlq/0:5", nil, ck)
	if letter.Code != http.StatusOK || !strings.Contains(letter.Body.String(), `<td id="event">`+h.f.longID+`</td>`) {
		t.Fatalf("the letter's page lacks its whole id: %d", letter.Code)
	}
}

// An order's page shows its customer's ID opened, "[erased]" once the customer
// is erased, and a plain one (placed before sealing) as it is: never the sealed
// value. Without a customers' store there is no console.
func TestOrderPageOpensTheCustomer(t *testing.T) {
	key, err := personal.NewKey(personal.NewKeyID(), "acme", personal.NewRaw())
	if err != nil {
		t.Fatal(err)
	}
	sealed := key.Seal("cus_opened")
	for name, c := range map[string]struct {
		customer string
		erased   bool
		want     string
	}{
		"sealed": {sealed, false, "<td>cus_opened</td>"},
		"erased": {sealed, true, "<td>[erased]</td>"},
		"plain":  {"", false, "<td>cus_shown</td>"},
	} {
		h := newHarness(t)
		h.f.customer, h.f.key, h.f.erased = c.customer, key, c.erased
		ck, _ := h.login(t, token)
		w := h.do("GET", "/orders/"+orderID, nil, ck)
		body := w.Body.String()
		if w.Code != http.StatusOK || !strings.Contains(body, "<tr><th>Customer</th>"+c.want) {
			t.Errorf("%s: %d, want the customer %s:\n%s", name, w.Code, c.want, body)
		}
		if strings.Contains(body, sealed) || strings.Contains(body, "pd1.") {
			t.Errorf("%s: the page shows the sealed value", name)
		}
	}
	f := &fakes{}
	if _, err := New(Stores{Orders: f, Payments: f, Refunds: f, Keys: f, Findings: f, Letters: letters{f}},
		Options{Tokens: []string{token}}, slog.Default()); err == nil {
		t.Error("a console without a customers' store")
	}
}
