// Package custkeys keeps each customer's data key (personal.Key) in
// customer_keys, sealed under the deployment's PAYLOAD_KEYS, and the deployment's
// own secrets beside them: the customer hash key and the receipt signing key.
// Destroying a customer's key is the erasure of every value sealed under it.
package custkeys

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/personal"
)

// Sealer seals and opens bytes under the deployment's keys (payloadcodec.Codec).
type Sealer interface {
	Seal(b []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// cacheTTL bounds how long a process keeps a key another process may have
// destroyed: an erasure waits this long before it reports the key gone.
const cacheTTL = 10 * time.Second

// CacheTTL is how long a process may keep using a key after it was destroyed.
func CacheTTL() time.Duration { return cacheTTL }

// maxCached bounds the cache whatever the number of customers.
const maxCached = 10000

// Store is customer_keys and deployment_secrets: the only code that reads them.
type Store struct {
	db     database.DB
	sealer Sealer
	hasher personal.Hasher
	signer ed25519.PrivateKey
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]cached // by key ID, and by tenant + hash
}

type cached struct {
	key personal.Key
	at  time.Time
}

// Open loads (or, the first time, makes) the deployment's secrets and returns
// the store.
func Open(ctx context.Context, pool *pgxpool.Pool, sealer Sealer) (*Store, error) {
	s := &Store{db: pool, sealer: sealer, now: time.Now, cache: map[string]cached{}}
	hashKey, err := s.secret(ctx, "customer-hash", 32)
	if err != nil {
		return nil, err
	}
	if s.hasher, err = personal.NewHasher(hashKey); err != nil {
		return nil, err
	}
	seed, err := s.secret(ctx, "receipt-signing", ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	s.signer = ed25519.NewKeyFromSeed(seed)
	return s, nil
}

// secret is the deployment's secret called name, made on first use by whichever
// process gets there first.
func (s *Store) secret(ctx context.Context, name string, size int) ([]byte, error) {
	fresh := personal.NewRaw()[:size]
	wrapped, err := s.sealer.Seal(append([]byte(name+"\x00"), fresh...))
	if err != nil {
		return nil, fmt.Errorf("seal secret %s: %w", name, err)
	}
	if _, err := s.db.Exec(ctx, `INSERT INTO deployment_secrets (name, wrapped) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		name, wrapped); err != nil {
		return nil, fmt.Errorf("store secret %s: %w", name, err)
	}
	if err := s.db.QueryRow(ctx, `SELECT wrapped FROM deployment_secrets WHERE name = $1`, name).Scan(&wrapped); err != nil {
		return nil, fmt.Errorf("read secret %s: %w", name, err)
	}
	plain, err := s.sealer.Open(wrapped)
	if err != nil {
		return nil, fmt.Errorf("open secret %s (is PAYLOAD_KEYS the deployment's?): %w", name, err)
	}
	raw, ok := cutLabel(plain, name)
	if !ok || len(raw) != size {
		return nil, fmt.Errorf("secret %s: malformed", name)
	}
	return raw, nil
}

// Hasher derives customers' keyed hashes.
func (s *Store) Hasher() personal.Hasher { return s.hasher }

// PrintKey keys the fingerprints of requests that name a customer (an
// erasure's), which a plain digest would let anyone match against guesses.
func (s *Store) PrintKey() []byte { return s.hasher.Derive("request fingerprint") }

// Signer is the deployment's receipt signing key.
func (s *Store) Signer() ed25519.PrivateKey { return s.signer }

// For is the live data key of (tenant, customer), made on first use.
func (s *Store) For(ctx context.Context, tenant, customer string) (personal.Key, error) {
	hash := s.hasher.Hash(tenant, customer)
	ck := tenant + "\x00" + string(hash)
	if k, ok := s.fromCache(ck); ok {
		return k, nil
	}
	id, raw := personal.NewKeyID(), personal.NewRaw()
	k, err := personal.NewKey(id, tenant, raw)
	if err != nil {
		return personal.Key{}, err
	}
	wrapped, err := s.wrap(k, hash, raw)
	if err != nil {
		return personal.Key{}, err
	}
	var liveID string
	var liveWrapped []byte
	err = s.db.QueryRow(ctx, `
		WITH made AS (
			INSERT INTO customer_keys (tenant, customer_hash, key_id, wrapped, fingerprint)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant, customer_hash) WHERE destroyed_at IS NULL DO NOTHING
			RETURNING key_id, wrapped)
		SELECT key_id, wrapped FROM made
		UNION ALL
		SELECT key_id, wrapped FROM customer_keys
		WHERE tenant = $1 AND customer_hash = $2 AND destroyed_at IS NULL
		LIMIT 1`, tenant, hash, id, wrapped, k.Fingerprint(raw)).Scan(&liveID, &liveWrapped)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another process's key was committed after this statement began: the
		// insert saw it and did nothing, but the statement's snapshot cannot.
		// A statement of its own can.
		err = s.db.QueryRow(ctx, `SELECT key_id, wrapped FROM customer_keys
			WHERE tenant = $1 AND customer_hash = $2 AND destroyed_at IS NULL`, tenant, hash).Scan(&liveID, &liveWrapped)
	}
	if err != nil {
		return personal.Key{}, fmt.Errorf("data key of a customer of %s: %w", tenant, err)
	}
	if liveID != id { // another process made it first
		if k, err = s.unwrap(liveID, tenant, hash, liveWrapped); err != nil {
			return personal.Key{}, err
		}
	}
	s.toCache(ck, k)
	return k, nil
}

// ByID is the key a sealed value names; personal.ErrErased once destroyed.
func (s *Store) ByID(ctx context.Context, tenant, id string) (personal.Key, error) {
	if k, ok := s.fromCache(id); ok && k.Tenant == tenant {
		return k, nil
	}
	var hash, wrapped []byte
	err := s.db.QueryRow(ctx, `SELECT customer_hash, wrapped FROM customer_keys WHERE tenant = $1 AND key_id = $2`,
		tenant, id).Scan(&hash, &wrapped)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return personal.Key{}, fmt.Errorf("data key %s of %s: %w (no such key)", id, tenant, personal.ErrErased)
	case err != nil:
		return personal.Key{}, fmt.Errorf("data key %s: %w", id, err)
	case wrapped == nil:
		return personal.Key{}, fmt.Errorf("data key %s: %w", id, personal.ErrErased)
	}
	k, err := s.unwrap(id, tenant, hash, wrapped)
	if err != nil {
		return personal.Key{}, err
	}
	s.toCache(id, k)
	return k, nil
}

// Seal seals a personal value of (tenant, customer) under the customer's key.
func (s *Store) Seal(ctx context.Context, tenant, customer, value string) (string, error) {
	if value == "" {
		return "", nil
	}
	k, err := s.For(ctx, tenant, customer)
	if err != nil {
		return "", err
	}
	return k.Seal(value), nil
}

// Reveal opens a value of tenant: a sealed one with its key (personal.ErrErased
// once destroyed), a plain one (written before sealing) as it is.
func (s *Store) Reveal(ctx context.Context, tenant, value string) (string, error) {
	id, ok := personal.KeyID(value)
	if !ok {
		return value, nil
	}
	k, err := s.ByID(ctx, tenant, id)
	if err != nil {
		return "", err
	}
	return k.Open(value)
}

// Shown is Reveal for a reader: an erased value shows as personal.Erased.
func (s *Store) Shown(ctx context.Context, tenant, value string) (string, error) {
	v, err := s.Reveal(ctx, tenant, value)
	if errors.Is(err, personal.ErrErased) {
		return personal.Erased, nil
	}
	return v, err
}

func (s *Store) fromCache(k string) (personal.Key, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cache[k]
	if !ok || s.now().Sub(c.at) > cacheTTL {
		return personal.Key{}, false
	}
	return c.key, true
}

func (s *Store) toCache(k string, key personal.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cache) >= maxCached {
		clear(s.cache) // a bounded cache; refilled from the table as keys are used
	}
	s.cache[k] = cached{key: key, at: s.now()}
}

// forget drops every cached key of (tenant, hash) in this process.
func (s *Store) forget(tenant string, hash []byte, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cache, tenant+"\x00"+string(hash))
	delete(s.cache, id)
}

// wrap seals a data key under the deployment's keys, bound to its tenant, hash
// and ID: a wrapped key copied to another customer's row does not open.
func (s *Store) wrap(k personal.Key, hash, raw []byte) ([]byte, error) {
	w, err := s.sealer.Seal(append([]byte(label(k.Tenant, hash, k.ID)+"\x00"), raw...))
	if err != nil {
		return nil, fmt.Errorf("wrap data key %s: %w", k.ID, err)
	}
	return w, nil
}

func (s *Store) unwrap(id, tenant string, hash, wrapped []byte) (personal.Key, error) {
	plain, err := s.sealer.Open(wrapped)
	if err != nil {
		return personal.Key{}, fmt.Errorf("unwrap data key %s: %w", id, err)
	}
	raw, ok := cutLabel(plain, label(tenant, hash, id))
	if !ok {
		return personal.Key{}, fmt.Errorf("data key %s is not %s's of this customer", id, tenant)
	}
	return personal.NewKey(id, tenant, raw)
}

func label(tenant string, hash []byte, id string) string {
	return tenant + "\x00" + string(hash) + "\x00" + id
}

func cutLabel(plain []byte, label string) ([]byte, bool) {
	head := label + "\x00"
	if len(plain) <= len(head) || string(plain[:len(head)]) != head {
		return nil, false
	}
	return plain[len(head):], true
}

// Destroyed is the destruction of a customer's keys, as a receipt shows it.
type Destroyed struct {
	Keys []DestroyedKey `json:"keys"`
}

// DestroyedKey is one destroyed key: its ID, its fingerprint (a digest of the
// material, which is gone) and when it was destroyed.
type DestroyedKey struct {
	ID          string    `json:"id"`
	Fingerprint string    `json:"fingerprint"`
	At          time.Time `json:"destroyed_at"`
}

// Destroy deletes the material of every key of (tenant, hash), keeping each key's
// ID, fingerprint and times as the record of it. A second call destroys nothing
// more and returns the same keys.
func (s *Store) Destroy(ctx context.Context, tenant string, hash []byte) (Destroyed, error) {
	if _, err := s.db.Exec(ctx, `UPDATE customer_keys SET wrapped = NULL, destroyed_at = now()
		WHERE tenant = $1 AND customer_hash = $2 AND destroyed_at IS NULL`, tenant, hash); err != nil {
		return Destroyed{}, fmt.Errorf("destroy keys of a customer of %s: %w", tenant, err)
	}
	rows, err := s.db.Query(ctx, `SELECT key_id, fingerprint, destroyed_at FROM customer_keys
		WHERE tenant = $1 AND customer_hash = $2 ORDER BY created_at, key_id`, tenant, hash)
	if err != nil {
		return Destroyed{}, fmt.Errorf("read destroyed keys: %w", err)
	}
	var d Destroyed
	for rows.Next() {
		var k DestroyedKey
		if err := rows.Scan(&k.ID, &k.Fingerprint, &k.At); err != nil {
			return Destroyed{}, fmt.Errorf("read destroyed keys: %w", err)
		}
		d.Keys = append(d.Keys, k)
		s.forget(tenant, hash, k.ID)
	}
	if err := rows.Err(); err != nil {
		return Destroyed{}, fmt.Errorf("read destroyed keys: %w", err)
	}
	return d, nil
}

// Rewrap seals every live data key and the deployment's secrets again under
// the keyring's writing key: run after a new PAYLOAD_KEYS key is put first and
// before an old one leaves the ring, or what the old key wrapped is lost with
// it. It returns how many it rewrapped; a second run rewraps the same again,
// harmlessly.
func (s *Store) Rewrap(ctx context.Context) (int, error) {
	n, err := s.rewrapSecrets(ctx)
	if err != nil {
		return n, err
	}
	for after := ""; ; {
		page, err := s.livePage(ctx, after, 1000)
		if err != nil || len(page) == 0 {
			return n, err
		}
		for _, k := range page {
			plain, err := s.sealer.Open(k.wrapped)
			if err != nil {
				return n, fmt.Errorf("unwrap data key %s: %w", k.id, err)
			}
			again, err := s.sealer.Seal(plain)
			if err != nil {
				return n, fmt.Errorf("wrap data key %s: %w", k.id, err)
			}
			// Only a key still live is rewrapped: one destroyed meanwhile stays destroyed.
			if _, err := s.db.Exec(ctx, `UPDATE customer_keys SET wrapped = $2 WHERE key_id = $1 AND wrapped IS NOT NULL`, k.id, again); err != nil {
				return n, fmt.Errorf("rewrap data key %s: %w", k.id, err)
			}
			n++
		}
		after = page[len(page)-1].id
	}
}

type wrappedKey struct {
	id      string
	wrapped []byte
}

// livePage is up to limit live keys after the key ID after, in ID order.
func (s *Store) livePage(ctx context.Context, after string, limit int) ([]wrappedKey, error) {
	rows, err := s.db.Query(ctx, `SELECT key_id, wrapped FROM customer_keys
		WHERE wrapped IS NOT NULL AND key_id > $1 ORDER BY key_id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read data keys: %w", err)
	}
	defer rows.Close()
	var out []wrappedKey
	for rows.Next() {
		var k wrappedKey
		if err := rows.Scan(&k.id, &k.wrapped); err != nil {
			return nil, fmt.Errorf("read data keys: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

func (s *Store) rewrapSecrets(ctx context.Context) (int, error) {
	n := 0
	for _, name := range []string{"customer-hash", "receipt-signing"} {
		var wrapped []byte
		if err := s.db.QueryRow(ctx, `SELECT wrapped FROM deployment_secrets WHERE name = $1`, name).Scan(&wrapped); err != nil {
			return n, fmt.Errorf("read secret %s: %w", name, err)
		}
		plain, err := s.sealer.Open(wrapped)
		if err != nil {
			return n, fmt.Errorf("open secret %s: %w", name, err)
		}
		again, err := s.sealer.Seal(plain)
		if err != nil {
			return n, fmt.Errorf("seal secret %s: %w", name, err)
		}
		if _, err := s.db.Exec(ctx, `UPDATE deployment_secrets SET wrapped = $2 WHERE name = $1`, name, again); err != nil {
			return n, fmt.Errorf("rewrap secret %s: %w", name, err)
		}
		n++
	}
	return n, nil
}
