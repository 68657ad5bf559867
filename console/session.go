package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	cookieName = "orderflow_console"
	// sessionLife is how long a login lasts.
	sessionLife = 8 * time.Hour
	// maxToken bounds the login form's token.
	maxToken = 512
)

// session is a logged-in operator: Operator names the token used (a digest,
// never the token), for the log of what they did.
type session struct {
	value    string // the cookie's signed value; "" for none
	Operator string
	Expires  time.Time
}

// sessions signs and checks session cookies with a key derived from the
// tokens.
type sessions struct {
	key     []byte
	digests [][sha256.Size]byte
	now     func() time.Time
}

func newSessions(tokens []string, now func() time.Time) (*sessions, error) {
	if len(tokens) == 0 {
		return nil, errors.New("CONSOLE_TOKENS: the console needs at least one token")
	}
	s := &sessions{now: now}
	mac := hmac.New(sha256.New, []byte("orderflow console session key v1"))
	for _, t := range slices.Sorted(slices.Values(tokens)) {
		if len(t) < 16 || len(t) > maxToken {
			return nil, fmt.Errorf("CONSOLE_TOKENS: each token needs 16 to %d characters", maxToken)
		}
		s.digests = append(s.digests, sha256.Sum256([]byte(t)))
		// Length-prefixed, so two lists never run together into one key.
		mac.Write([]byte(strconv.Itoa(len(t)) + ":" + t))
	}
	s.key = mac.Sum(nil)
	return s, nil
}

// operatorOf is the name a token's actions are logged under: its digest's
// start, which says which token without being it.
func operatorOf(digest [sha256.Size]byte) string {
	return "sha256:" + hex.EncodeToString(digest[:6])
}

// match is the operator of token if it is one of the set, comparing every
// token's digest in constant time.
func (s *sessions) match(token string) (string, bool) {
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i, d := range s.digests {
		if subtle.ConstantTimeCompare(sum[:], d[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return operatorOf(s.digests[found]), true
}

func (s *sessions) sign(payload string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// issue is a new session of operator: a random ID, the operator, the expiry,
// signed.
func (s *sessions) issue(operator string) (session, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return session{}, fmt.Errorf("session ID: %w", err)
	}
	exp := s.now().Add(sessionLife).Truncate(time.Second)
	payload := base64.RawURLEncoding.EncodeToString(id) + "." + operator + "." + strconv.FormatInt(exp.Unix(), 10)
	return session{value: payload + "." + s.sign(payload), Operator: operator, Expires: exp}, nil
}

// verify is the session a cookie value holds, if its signature is the key's
// and it has not expired.
func (s *sessions) verify(value string) (session, bool) {
	payload, sig, ok := cutLast(value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.sign(payload))) {
		return session{}, false
	}
	parts := strings.Split(payload, ".")
	if len(parts) != 3 {
		return session{}, false
	}
	unix, err := strconv.ParseInt(parts[2], 10, 64)
	exp := time.Unix(unix, 0)
	if err != nil || !s.now().Before(exp) {
		return session{}, false
	}
	return session{value: value, Operator: parts[1], Expires: exp}, true
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// csrf is the form token of a session: bound to it, so a token from another
// session (or none) is refused.
func (s *sessions) csrf(sess session) string {
	if sess.value == "" {
		return ""
	}
	return s.sign("csrf." + sess.value)
}

func (s *sessions) checkCSRF(sess session, got string) bool {
	return got != "" && hmac.Equal([]byte(got), []byte(s.csrf(sess)))
}

// secure is whether the operator reached the console over TLS (here or at a
// proxy in front): the cookie then never travels in the clear.
func secure(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

func setCookie(w http.ResponseWriter, r *http.Request, value string, expires time.Time, maxAge int) {
	// Secure only over TLS: a console on a private plain-HTTP listener could
	// otherwise never keep its session.
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/", Expires: expires, MaxAge: maxAge, //nolint:gosec // G124: Secure is set whenever TLS is in front (secure)
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)})
}

// authed is a handler of a logged-in operator's request.
type authed func(w http.ResponseWriter, r *http.Request, s session)

// guard runs h only for a valid session, and a POST only with its CSRF token:
// without a session a GET goes to the login page and anything else is a 401.
func (c *Console) guard(h authed) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var sess session
		ok := false
		if ck, err := r.Cookie(cookieName); err == nil {
			sess, ok = c.sessions.verify(ck.Value)
		}
		if !ok {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			c.render(w, r, http.StatusUnauthorized, "login", view{Title: "Log in", Error: "log in first"})
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !c.sessions.checkCSRF(sess, formValue(r, "csrf", 128)) {
			c.logger.WarnContext(r.Context(), "console request refused", "reason", "bad CSRF token", "operator", sess.Operator, "path", r.URL.Path)
			c.fail(w, r, sess, http.StatusForbidden, "the form's token is missing or not this session's: reload the page")
			return
		}
		h(w, r, sess)
	}
}

// formValue is a form field, trimmed, or "" when it is longer than max.
func formValue(r *http.Request, name string, max int) string {
	v := strings.TrimSpace(r.PostFormValue(name))
	if len(v) > max {
		return ""
	}
	return v
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", view{Title: "Log in"})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	token := r.PostFormValue("token")
	operator, ok := c.sessions.match(token)
	if len(token) > maxToken || !ok {
		c.logger.WarnContext(r.Context(), "console login refused", "remote", r.RemoteAddr)
		c.render(w, r, http.StatusUnauthorized, "login", view{Title: "Log in", Error: "that token is not an operator's"})
		return
	}
	sess, err := c.sessions.issue(operator)
	if err != nil {
		c.logger.ErrorContext(r.Context(), "console login failed", "err", err)
		http.Error(w, "login failed", http.StatusInternalServerError)
		return
	}
	setCookie(w, r, sess.value, sess.Expires, int(sessionLife/time.Second))
	c.logger.InfoContext(r.Context(), "console login", "operator", operator, "remote", r.RemoteAddr)
	http.Redirect(w, r, "/orders", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s session) {
	setCookie(w, r, "", time.Unix(0, 0), -1)
	c.logger.InfoContext(r.Context(), "console logout", "operator", s.Operator)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
