package codecauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

const token = "codec-token-0123456789abcdef"

type signer struct {
	key *ecdsa.PrivateKey
	kid string
}

func newSigner(t *testing.T, kid string) signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{k, kid}
}

func (s signer) sign(t *testing.T, c jwt.Claims) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: s.key, KeyID: s.kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(sig).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Every way in without a valid credential, for the namespace, from the origin, is
// refused before a payload is decoded; each valid one decodes.
func TestGuard(t *testing.T) {
	trusted, stranger := newSigner(t, "k1"), newSigner(t, "k1")
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &trusted.key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	decoded := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { decoded++; _, _ = io.WriteString(w, "decoded") })
	h, err := Guard(next, Options{Tokens: []string{token}, Issuer: "https://idp.example", Audience: "temporal-ui",
		JWKS: path, Namespace: "orderflow", Origin: "https://ui.example"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claims := func(mod func(*jwt.Claims)) jwt.Claims {
		c := jwt.Claims{Issuer: "https://idp.example", Audience: jwt.Audience{"temporal-ui"}, Subject: "alice",
			Expiry: jwt.NewNumericDate(now.Add(time.Minute)), IssuedAt: jwt.NewNumericDate(now)}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	tests := []struct {
		name, path, auth, ns, origin string
		want                         int
	}{
		{"no credential", "/codec/decode", "", "orderflow", "", 401},
		{"wrong token", "/codec/decode", "Bearer codec-token-wrong-0000000", "orderflow", "", 401},
		{"basic auth", "/codec/decode", "Basic " + token, "orderflow", "", 401},
		{"wrong path token", "/codec/t/nope-nope-nope-nope/decode", "", "orderflow", "", 401},
		{"expired JWT", "/codec/decode", "Bearer " + trusted.sign(t, claims(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Hour)) })), "orderflow", "", 401},
		{"JWT without exp", "/codec/decode", "Bearer " + trusted.sign(t, claims(func(c *jwt.Claims) { c.Expiry = nil })), "orderflow", "", 401},
		{"JWT signed by another key", "/codec/decode", "Bearer " + stranger.sign(t, claims(nil)), "orderflow", "", 401},
		{"JWT for another audience", "/codec/decode", "Bearer " + trusted.sign(t, claims(func(c *jwt.Claims) { c.Audience = jwt.Audience{"other"} })), "orderflow", "", 401},
		{"JWT from another issuer", "/codec/decode", "Bearer " + trusted.sign(t, claims(func(c *jwt.Claims) { c.Issuer = "https://evil.example" })), "orderflow", "", 401},
		{"another namespace", "/codec/decode", "Bearer " + token, "default", "", 403},
		{"no namespace named", "/codec/decode", "Bearer " + token, "", "", 200},
		{"another origin", "/codec/decode", "Bearer " + token, "orderflow", "https://evil.example", 403},
		{"token", "/codec/decode", "Bearer " + token, "orderflow", "", 200},
		{"path token", "/codec/t/" + token + "/decode", "", "orderflow", "https://ui.example", 200},
		{"JWT", "/codec/decode", "Bearer " + trusted.sign(t, claims(nil)), "orderflow", "https://ui.example", 200},
	}
	for _, tt := range tests {
		before := decoded
		r := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(`{"payloads":[]}`))
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		if tt.ns != "" {
			r.Header.Set("X-Namespace", tt.ns)
		}
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("%s: %d, want %d (%s)", tt.name, w.Code, tt.want, strings.TrimSpace(w.Body.String()))
		}
		if ok := decoded > before; ok != (tt.want == 200) {
			t.Errorf("%s: decoded %v", tt.name, ok)
		}
		if tt.want == 200 && tt.origin != "" && w.Header().Get("Access-Control-Allow-Origin") != tt.origin {
			t.Errorf("%s: CORS headers %v", tt.name, w.Header())
		}
	}
}

func TestGuardRefusesToRunOpen(t *testing.T) {
	next := http.NotFoundHandler()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for name, o := range map[string]Options{
		"no credential":   {Namespace: "orderflow"},
		"short token":     {Tokens: []string{"short"}, Namespace: "orderflow"},
		"JWKS no issuer":  {JWKS: "/nonexistent", Namespace: "orderflow"},
		"no namespace":    {Tokens: []string{token}},
		"unreadable JWKS": {JWKS: "/nonexistent", Issuer: "i", Audience: "a", Namespace: "orderflow"},
	} {
		if _, err := Guard(next, o, logger); err == nil {
			t.Errorf("%s: the guard started", name)
		}
	}
}
