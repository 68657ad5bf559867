// Package codecauth guards the codec endpoint of the Temporal Web UI: it decrypts
// payloads (card tokens, customer IDs) for whoever it answers, so it answers only a
// caller with a credential, for the worker's namespace, from the configured origin.
package codecauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Options are the credentials the guard accepts and what it checks beside them.
type Options struct {
	// Tokens are bearer tokens accepted as `Authorization: Bearer <token>`, or in
	// the path (/codec/t/<token>/decode) for a UI that can send no header.
	Tokens []string
	// Issuer, Audience and JWKS accept the Web UI's forwarded access token, a JWT
	// signed by a key of the JWKS (a file path or an https URL).
	Issuer, Audience, JWKS string
	// Namespace is the only X-Namespace answered (a request may name none).
	Namespace string
	// Origin is the only origin CORS lets call from a browser.
	Origin string
}

// Guard returns next behind the credential, namespace and CORS checks.
func Guard(next http.Handler, o Options, logger *slog.Logger) (http.Handler, error) {
	g := &guard{next: next, o: o, logger: logger}
	for _, t := range o.Tokens {
		if len(t) < 16 {
			return nil, errors.New("CODEC_TOKENS: each token needs at least 16 characters")
		}
		g.tokens = append(g.tokens, sha256.Sum256([]byte(t)))
	}
	if o.JWKS != "" {
		if o.Issuer == "" || o.Audience == "" {
			return nil, errors.New("CODEC_JWKS needs CODEC_JWT_ISSUER and CODEC_JWT_AUDIENCE")
		}
		g.keys = &keySource{where: o.JWKS}
		if _, err := g.keys.get(context.Background()); err != nil {
			return nil, err
		}
	}
	if len(g.tokens) == 0 && g.keys == nil {
		return nil, errors.New("the codec endpoint needs a credential: CODEC_TOKENS, or CODEC_JWKS with CODEC_JWT_ISSUER and CODEC_JWT_AUDIENCE")
	}
	if o.Namespace == "" {
		return nil, errors.New("the codec endpoint needs its namespace")
	}
	return g, nil
}

type guard struct {
	next   http.Handler
	o      Options
	tokens [][sha256.Size]byte
	keys   *keySource
	logger *slog.Logger
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" {
		if origin != g.o.Origin {
			http.Error(w, "origin not allowed", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Add("Vary", "Origin")
	}
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent) // a preflight carries no credential
		return
	}
	if err := g.authenticate(r); err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="orderflow-codec"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		g.logger.WarnContext(r.Context(), "codec request refused", "reason", err.Error())
		return
	}
	// The UI names its namespace; a CLI may name none.
	if ns := r.Header.Get("X-Namespace"); ns != "" && ns != g.o.Namespace {
		http.Error(w, "this codec serves namespace "+g.o.Namespace, http.StatusForbidden)
		return
	}
	g.next.ServeHTTP(w, r)
}

// authenticate accepts a bearer token of the set (in the header or the path) or a
// valid JWT.
func (g *guard) authenticate(r *http.Request) error {
	if tok, ok := pathToken(r.URL.Path); ok {
		if g.knownToken(tok) {
			return nil
		}
		return errors.New("unknown path token")
	}
	scheme, raw, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || raw == "" {
		return errors.New("no credential")
	}
	raw = strings.TrimSpace(raw)
	if g.knownToken(raw) {
		return nil
	}
	if g.keys == nil {
		return errors.New("unknown token")
	}
	return g.verifyJWT(r.Context(), raw)
}

func (g *guard) knownToken(t string) bool {
	sum := sha256.Sum256([]byte(t))
	found := 0
	for _, k := range g.tokens {
		found |= subtle.ConstantTimeCompare(sum[:], k[:])
	}
	return found == 1
}

// pathToken is the token of /codec/t/<token>/..., if the path has one.
func pathToken(path string) (string, bool) {
	_, rest, ok := strings.Cut(path, "/t/")
	if !ok {
		return "", false
	}
	tok, _, ok := strings.Cut(rest, "/")
	return tok, ok && tok != ""
}

// signingAlgorithms are the JWT algorithms accepted: asymmetric only, so the JWKS
// holds nothing that could sign.
var signingAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.ES256, jose.ES384, jose.EdDSA}

func (g *guard) verifyJWT(ctx context.Context, raw string) error {
	tok, err := jwt.ParseSigned(raw, signingAlgorithms)
	if err != nil {
		return fmt.Errorf("not a signed JWT: %w", err)
	}
	keys, err := g.keys.get(ctx)
	if err != nil {
		return err
	}
	var claims jwt.Claims
	if err := tok.Claims(keys, &claims); err != nil {
		return fmt.Errorf("JWT signature: %w", err)
	}
	if claims.Expiry == nil {
		return errors.New("JWT without exp")
	}
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: g.o.Issuer, AnyAudience: jwt.Audience{g.o.Audience}, Time: time.Now()}, 30*time.Second)
	if err != nil {
		return fmt.Errorf("JWT claims: %w", err)
	}
	return nil
}

// keySource is a JWKS read from a file or an https URL, read again every
// jwksLifetime.
type keySource struct {
	where string
	mu    sync.Mutex
	keys  *jose.JSONWebKeySet
	read  time.Time
}

const jwksLifetime = 5 * time.Minute

func (s *keySource) get(ctx context.Context) (*jose.JSONWebKeySet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys != nil && time.Since(s.read) < jwksLifetime {
		return s.keys, nil
	}
	keys, err := readJWKS(ctx, s.where)
	if err != nil {
		if s.keys != nil {
			return s.keys, nil // keep the last good set through a JWKS outage
		}
		return nil, err
	}
	s.keys, s.read = keys, time.Now()
	return keys, nil
}

func readJWKS(ctx context.Context, where string) (*jose.JSONWebKeySet, error) {
	var body []byte
	if strings.HasPrefix(where, "https://") || strings.HasPrefix(where, "http://") {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
		if err != nil {
			return nil, fmt.Errorf("CODEC_JWKS: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("CODEC_JWKS: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("CODEC_JWKS: %s answered %d", where, resp.StatusCode)
		}
		if body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20)); err != nil {
			return nil, fmt.Errorf("CODEC_JWKS: %w", err)
		}
	} else {
		var err error
		if body, err = os.ReadFile(where); err != nil { //nolint:gosec // G304: the path is CODEC_JWKS, set by the operator
			return nil, fmt.Errorf("CODEC_JWKS: %w", err)
		}
	}
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal(body, &keys); err != nil {
		return nil, fmt.Errorf("CODEC_JWKS %s: not a JSON Web Key Set: %w", where, err)
	}
	if len(keys.Keys) == 0 {
		return nil, fmt.Errorf("CODEC_JWKS %s: a JSON Web Key Set with no keys", where)
	}
	return &keys, nil
}
