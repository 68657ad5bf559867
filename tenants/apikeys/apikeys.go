// Package apikeys issues and verifies API keys. Only a SHA-256 of each key is stored;
// each key belongs to exactly one tenant.
package apikeys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/orderflow/orderflow/tenants"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrUnauthorized is any key that is malformed, unknown or revoked.
var ErrUnauthorized = errors.New("invalid API key")

const prefix = "of_"

// DefaultCacheTTL bounds how long a verified key is trusted without asking Postgres
// again, and so how long a revocation takes to bite.
const DefaultCacheTTL = 30 * time.Second

// Store keeps API keys in Postgres.
type Store struct {
	pool *pgxpool.Pool
	*verifier
}

// New returns a key store that trusts what Postgres said of a key for cacheTTL: a
// revoked key is refused within that time.
func New(pool *pgxpool.Pool, cacheTTL time.Duration) *Store {
	return &Store{pool: pool, verifier: newVerifier(cacheTTL, lookupInterval, lookupRows(pool))}
}

// Create issues a key for tenant and returns it; it cannot be shown again.
func (s *Store) Create(ctx context.Context, tenant string) (string, error) {
	if !tenants.Valid(tenant) {
		return "", fmt.Errorf("tenant %q: use lower-case letters, digits, '-' and '_' (at most 63)", tenant)
	}
	idb := make([]byte, 6)
	secret := make([]byte, 24)
	if _, err := rand.Read(idb); err != nil {
		return "", fmt.Errorf("generate key: %w", err)
	}
	if _, err := rand.Read(secret); err != nil {
		return "", fmt.Errorf("generate key: %w", err)
	}
	id := hex.EncodeToString(idb)
	key := prefix + id + "_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secret))
	sum := sha256.Sum256([]byte(key))
	if _, err := s.pool.Exec(ctx, `INSERT INTO api_keys (id, tenant, key_hash) VALUES ($1, $2, $3)`, id, tenant, sum[:]); err != nil {
		return "", fmt.Errorf("store key: %w", err)
	}
	return key, nil
}

// Info is what can be shown of a key: never its secret.
type Info struct {
	Prefix    string // of_<id>, the part before the secret
	Tenant    string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// List returns the tenant's keys, newest first.
func (s *Store) List(ctx context.Context, tenant string) ([]Info, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, tenant, created_at, revoked_at FROM api_keys WHERE tenant = $1 ORDER BY created_at DESC, id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	defer rows.Close()
	var out []Info
	for rows.Next() {
		var k Info
		if err := rows.Scan(&k.Prefix, &k.Tenant, &k.CreatedAt, &k.RevokedAt); err != nil {
			return nil, fmt.Errorf("list API keys: %w", err)
		}
		k.Prefix = prefix + k.Prefix
		out = append(out, k)
	}
	return out, rows.Err()
}

// ErrNoSuchKey is a revoke of a key prefix that names no active key.
var ErrNoSuchKey = errors.New("no active API key with this prefix")

// Revoke revokes the key whose prefix (of_<id>, as List shows it) is given.
func (s *Store) Revoke(ctx context.Context, keyPrefix string) error {
	id, ok := strings.CutPrefix(keyPrefix, prefix)
	if !ok || len(id) != 12 {
		return fmt.Errorf("%q is not a key prefix (of_ and 12 hex digits, as `keys list` shows)", keyPrefix)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, id)
	if err != nil {
		return fmt.Errorf("revoke API key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNoSuchKey
	}
	return nil
}

// keyID extracts the public id of "of_<12 hex>_<secret>".
func keyID(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || len(key) > 128 {
		return "", false
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok || len(id) != 12 || secret == "" {
		return "", false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return "", false
	}
	return id, true
}

// ActiveKeys counts each tenant's keys that are not revoked, for every tenant that
// ever had a key (0 when all are revoked).
func (s *Store) ActiveKeys(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant, count(*) FILTER (WHERE revoked_at IS NULL) FROM api_keys GROUP BY tenant`)
	if err != nil {
		return nil, fmt.Errorf("count API keys: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var tenant string
		var n int
		if err := rows.Scan(&tenant, &n); err != nil {
			return nil, fmt.Errorf("count API keys: %w", err)
		}
		out[tenant] = n
	}
	return out, rows.Err()
}
