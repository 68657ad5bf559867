//go:build stack

package custkeys_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/payloadcodec"
	"github.com/orderflow/orderflow/platform/personal"
	"github.com/orderflow/orderflow/testkit/stacktest"
)

// The stack's database is shared, and so are its deployment secrets: the stores
// here seal them under the stack's own PAYLOAD_KEYS, as its processes do. A store
// that made them under a key of its own would lock every later one out.

func newContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// open is a store on pool with the stack's keys: a process of its own, with a
// cache of its own.
func open(t *testing.T, ctx context.Context, pool *pgxpool.Pool) *custkeys.Store {
	t.Helper()
	s, err := custkeys.Open(ctx, pool, stacktest.Codec(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rows counts the customer's key rows, live or destroyed.
func rows(t *testing.T, ctx context.Context, pool *pgxpool.Pool, tenant string, hash []byte) (all, live int) {
	t.Helper()
	err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE destroyed_at IS NULL) FROM customer_keys
		WHERE tenant = $1 AND customer_hash = $2`, tenant, hash).Scan(&all, &live)
	if err != nil {
		t.Fatal(err)
	}
	return all, live
}

// The deployment's secrets are made once: two processes hash customers alike and
// sign with one key.
func TestTheDeploymentsSecretsAreMadeOnce(t *testing.T) {
	ctx := newContext(t)
	a, b := open(t, ctx, stacktest.Pool(t)), open(t, ctx, stacktest.Pool(t))
	tenant := stacktest.Name("tenant")
	if ha, hb := a.Hasher().Hex(tenant, "cus_1"), b.Hasher().Hex(tenant, "cus_1"); ha != hb {
		t.Fatalf("two stores hash one customer as %s and %s", ha, hb)
	}
	if string(a.PrintKey()) != string(b.PrintKey()) || len(a.PrintKey()) != 32 {
		t.Fatal("two stores have two print keys")
	}
	if !a.Signer().Equal(b.Signer()) {
		t.Fatal("two stores have two receipt signing keys")
	}
	var n int
	if err := stacktest.Pool(t).QueryRow(ctx, `SELECT count(*) FROM deployment_secrets
		WHERE name IN ('customer-hash', 'receipt-signing')`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d secrets rows, %v; want 2", n, err)
	}
}

// A process with other PAYLOAD_KEYS cannot open the deployment's secrets, and
// says which setting is wrong: keys of another ID, or of the deployment's key's ID
// with other material.
func TestOtherPayloadKeysCannotOpenTheSecrets(t *testing.T) {
	ctx := newContext(t)
	pool := stacktest.Pool(t)
	open(t, ctx, pool) // the secrets exist, under the stack's keys
	stack, err := payloadcodec.ParseKeyring(stacktest.Env(t)["PAYLOAD_KEYS"])
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"k1", stack.WriterID()} {
		raw := make([]byte, 32)
		_, _ = rand.Read(raw)
		ring, err := payloadcodec.ParseKeyring(id + ":" + base64.StdEncoding.EncodeToString(raw))
		if err != nil {
			t.Fatal(err)
		}
		s, err := custkeys.Open(ctx, pool, payloadcodec.New(ring))
		if err == nil || s != nil || !strings.Contains(err.Error(), "PAYLOAD_KEYS") {
			t.Fatalf("opened with other keys of ID %s: %v, %v; want an error naming PAYLOAD_KEYS", id, s, err)
		}
	}
}

// A customer has one live key, whichever process asks and however often.
func TestACustomerHasOneKey(t *testing.T) {
	ctx := newContext(t)
	pool := stacktest.Pool(t)
	s := open(t, ctx, pool)
	tenant, other := stacktest.Name("tenant"), stacktest.Name("tenant")
	k1, err := s.For(ctx, tenant, "cus_1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := open(t, ctx, pool).For(ctx, tenant, "cus_1") // another process, nothing cached
	if err != nil || again.ID != k1.ID || again.Tenant != tenant {
		t.Fatalf("For again: %s of %s, %v; want %s", again.ID, again.Tenant, err, k1.ID)
	}
	if got, err := again.Open(k1.Seal("pm_card_visa")); err != nil || got != "pm_card_visa" {
		t.Fatalf("the key read back does not open what the first sealed: %q, %v", got, err)
	}
	for name, ask := range map[string][2]string{"another customer": {tenant, "cus_2"}, "another tenant": {other, "cus_1"}} {
		k, err := s.For(ctx, ask[0], ask[1])
		if err != nil || k.ID == k1.ID {
			t.Fatalf("%s: key %s, %v; want a key of its own", name, k.ID, err)
		}
	}
	if all, live := rows(t, ctx, pool, tenant, s.Hasher().Hash(tenant, "cus_1")); all != 1 || live != 1 {
		t.Fatalf("%d rows, %d live; want 1", all, live)
	}
}

// Two processes asked at once for a new customer's key make one between them.
func TestConcurrentForFromTwoProcessesMakesOneKey(t *testing.T) {
	ctx := newContext(t)
	pool1, pool2 := stacktest.Pool(t), stacktest.Pool(t)
	stores := []*custkeys.Store{open(t, ctx, pool1), open(t, ctx, pool2)}
	tenant := stacktest.Name("tenant")
	for c := range 10 { // a race is won or lost by chance: several customers
		customer := stacktest.Name("cus")
		start := make(chan struct{})
		ids, errs := make([]string, 8), make([]error, 8)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				k, err := stores[i%2].For(ctx, tenant, customer)
				ids[i], errs[i] = k.ID, err
			}()
		}
		close(start)
		wg.Wait()
		for i := range 8 {
			if errs[i] != nil {
				t.Fatalf("customer %d, call %d: %v", c, i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Fatalf("customer %d: call %d has key %s, call 0 %s", c, i, ids[i], ids[0])
			}
		}
		if all, live := rows(t, ctx, pool1, tenant, stores[0].Hasher().Hash(tenant, customer)); all != 1 || live != 1 {
			t.Fatalf("customer %d: %d rows, %d live; want 1", c, all, live)
		}
	}
}

func TestSealedValuesRevealAndPlainOnesPassThrough(t *testing.T) {
	ctx := newContext(t)
	pool := stacktest.Pool(t)
	s := open(t, ctx, pool)
	tenant := stacktest.Name("tenant")
	sealed, err := s.Seal(ctx, tenant, "cus_1", "pm_card_visa")
	if err != nil || !personal.IsSealed(sealed) || strings.Contains(sealed, "pm_card_visa") {
		t.Fatalf("sealed as %q, %v", sealed, err)
	}
	if empty, err := s.Seal(ctx, tenant, "cus_1", ""); err != nil || empty != "" {
		t.Fatalf("sealed \"\" as %q, %v", empty, err)
	}
	fresh := open(t, ctx, pool)
	for name, store := range map[string]*custkeys.Store{"the sealing store": s, "another process": fresh} {
		if got, err := store.Reveal(ctx, tenant, sealed); err != nil || got != "pm_card_visa" {
			t.Fatalf("%s revealed %q, %v", name, got, err)
		}
		if got, err := store.Shown(ctx, tenant, sealed); err != nil || got != "pm_card_visa" {
			t.Fatalf("%s showed %q, %v", name, got, err)
		}
	}
	// A row written before sealing holds the plain value.
	for _, plain := range []string{"cus_legacy", "", "pd1.not-a-key.x"} {
		if got, err := fresh.Reveal(ctx, tenant, plain); err != nil || got != plain {
			t.Fatalf("revealed plain %q as %q, %v", plain, got, err)
		}
	}
	// The key is its tenant's: another tenant's row cannot name it.
	if got, err := open(t, ctx, pool).Reveal(ctx, stacktest.Name("tenant"), sealed); err == nil || got != "" {
		t.Fatalf("another tenant revealed it: %q, %v", got, err)
	}
}

// Destroying a customer's keys erases every value sealed under them, in any
// process, and keeps each key's ID, fingerprint and time as the record of it.
func TestDestroyedKeysRevealNothing(t *testing.T) {
	ctx := newContext(t)
	pool := stacktest.Pool(t)
	s := open(t, ctx, pool)
	tenant := stacktest.Name("tenant")
	k, err := s.For(ctx, tenant, "cus_1")
	if err != nil {
		t.Fatal(err)
	}
	sealed := k.Seal("pm_card_visa")
	hash := s.Hasher().Hash(tenant, "cus_1")
	d, err := s.Destroy(ctx, tenant, hash)
	if err != nil || len(d.Keys) != 1 || d.Keys[0].ID != k.ID || d.Keys[0].Fingerprint == "" || d.Keys[0].At.IsZero() {
		t.Fatalf("destroyed %+v, %v; want key %s with its fingerprint and time", d, err, k.ID)
	}
	for name, store := range map[string]*custkeys.Store{"the destroying store": s, "another process": open(t, ctx, pool)} {
		if _, err := store.ByID(ctx, tenant, k.ID); !errors.Is(err, personal.ErrErased) {
			t.Fatalf("%s: ByID %v; want ErrErased", name, err)
		}
		if got, err := store.Reveal(ctx, tenant, sealed); !errors.Is(err, personal.ErrErased) || got != "" {
			t.Fatalf("%s: Reveal %q, %v; want ErrErased", name, got, err)
		}
		if got, err := store.Shown(ctx, tenant, sealed); err != nil || got != personal.Erased {
			t.Fatalf("%s: Shown %q, %v; want %q", name, got, err, personal.Erased)
		}
	}
	var fingerprint string
	var destroyedAt *time.Time
	var material bool
	if err := pool.QueryRow(ctx, `SELECT fingerprint, destroyed_at, wrapped IS NOT NULL FROM customer_keys WHERE key_id = $1`,
		k.ID).Scan(&fingerprint, &destroyedAt, &material); err != nil {
		t.Fatal(err)
	}
	if material || fingerprint != d.Keys[0].Fingerprint || destroyedAt == nil || !destroyedAt.Equal(d.Keys[0].At) {
		t.Fatalf("row: material kept %t, fingerprint %q, destroyed at %v; want none, %q, %v",
			material, fingerprint, destroyedAt, d.Keys[0].Fingerprint, d.Keys[0].At)
	}
}

// A second Destroy destroys nothing more and tells the same; a customer who comes
// back gets a new key, which the next erasure destroys beside the first.
func TestDestroyTwiceAndAReturningCustomer(t *testing.T) {
	ctx := newContext(t)
	pool := stacktest.Pool(t)
	s := open(t, ctx, pool)
	tenant := stacktest.Name("tenant")
	old, err := s.For(ctx, tenant, "cus_1")
	if err != nil {
		t.Fatal(err)
	}
	hash := s.Hasher().Hash(tenant, "cus_1")
	first, err := s.Destroy(ctx, tenant, hash)
	if err != nil {
		t.Fatal(err)
	}
	second, err := open(t, ctx, pool).Destroy(ctx, tenant, hash)
	if err != nil || !sameKeys(first, second) {
		t.Fatalf("destroyed again: %+v, %v; want %+v", second, err, first)
	}
	for name, store := range map[string]*custkeys.Store{"the destroying store": s, "another process": open(t, ctx, pool)} {
		k, err := store.For(ctx, tenant, "cus_1")
		if err != nil || k.ID == old.ID {
			t.Fatalf("%s: For after the erasure gave %s, %v; want a new key", name, k.ID, err)
		}
		if got, err := store.Reveal(ctx, tenant, k.Seal("pm_card_visa")); err != nil || got != "pm_card_visa" {
			t.Fatalf("%s: the new key reveals %q, %v", name, got, err)
		}
	}
	if all, live := rows(t, ctx, pool, tenant, hash); all != 2 || live != 1 {
		t.Fatalf("%d rows, %d live; want the destroyed key and one new", all, live)
	}
	third, err := s.Destroy(ctx, tenant, hash)
	if err != nil || len(third.Keys) != 2 || !sameKeys(custkeys.Destroyed{Keys: third.Keys[:1]}, first) || third.Keys[1].ID == old.ID {
		t.Fatalf("second erasure: %+v, %v; want the first key as it was and the new one", third, err)
	}
}

func sameKeys(a, b custkeys.Destroyed) bool {
	if len(a.Keys) != len(b.Keys) || len(a.Keys) == 0 {
		return false
	}
	for i := range a.Keys {
		if a.Keys[i].ID != b.Keys[i].ID || a.Keys[i].Fingerprint != b.Keys[i].Fingerprint || !a.Keys[i].At.Equal(b.Keys[i].At) {
			return false
		}
	}
	return true
}

// A wrapped key is bound to its tenant, customer and ID: copied onto another
// row, or its row moved to another customer, it does not open.
func TestAWrappedKeyOpensOnlyOnItsOwnRow(t *testing.T) {
	ctx := newContext(t)
	pool := stacktest.Pool(t)
	s := open(t, ctx, pool)
	tenant := stacktest.Name("tenant")
	a, err := s.For(ctx, tenant, "cus_a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.For(ctx, tenant, "cus_b")
	if err != nil {
		t.Fatal(err)
	}
	sealedB := b.Seal("pm_of_b")
	// B's row given A's material: B's values must not open with A's key.
	if _, err := pool.Exec(ctx, `UPDATE customer_keys SET wrapped = (SELECT wrapped FROM customer_keys WHERE key_id = $1)
		WHERE key_id = $2`, a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	fresh := open(t, ctx, pool)
	if k, err := fresh.ByID(ctx, tenant, b.ID); err == nil {
		t.Fatalf("B's row opened with A's material as %s", k.ID)
	}
	if got, err := fresh.Reveal(ctx, tenant, sealedB); err == nil || got != "" || errors.Is(err, personal.ErrErased) {
		t.Fatalf("revealed B's value as %q, %v; want an error, not an erasure", got, err)
	}
	if k, err := fresh.For(ctx, tenant, "cus_b"); err == nil {
		t.Fatalf("For gave B the key %s from A's material", k.ID)
	}
	// A's row moved to customer C: C gets no key of A's.
	hashC := s.Hasher().Hash(tenant, "cus_c")
	if _, err := pool.Exec(ctx, `UPDATE customer_keys SET customer_hash = $2 WHERE key_id = $1`, a.ID, hashC); err != nil {
		t.Fatal(err)
	}
	if k, err := open(t, ctx, pool).For(ctx, tenant, "cus_c"); err == nil {
		t.Fatalf("C was given A's moved key %s", k.ID)
	}
	if k, err := open(t, ctx, pool).ByID(ctx, tenant, a.ID); err == nil {
		t.Fatalf("A's moved row still opens as %s", k.ID)
	}
}
