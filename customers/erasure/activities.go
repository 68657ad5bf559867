package erasure

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/customers/receipt"
	"github.com/orderflow/orderflow/platform/custkeys"
	"github.com/orderflow/orderflow/platform/database"
	"github.com/orderflow/orderflow/platform/personal"
	"github.com/orderflow/orderflow/platform/records"
)

// Activities are an erasure's steps.
type Activities struct {
	db      database.DB
	keys    *custkeys.Store
	records *records.Store
}

// NewActivities returns the steps on pool, keys and records.
func NewActivities(pool *pgxpool.Pool, keys *custkeys.Store, recs *records.Store) *Activities {
	return &Activities{db: pool, keys: keys, records: recs}
}

// openStatuses are the orders whose money can still move: charging, waiting on
// the customer, or in doubt. A paid order stays refundable by its ID after the
// erasure, without the customer's data.
const openStatuses = `('PENDING', 'PAYMENT_PENDING', 'PAYMENT_UNKNOWN', 'PAYMENT_ACTION_REQUIRED')`

// Open counts the customer's orders whose money can still move, and refunds of
// the customer's orders still in flight.
func (a *Activities) ErasureOpen(ctx context.Context, in Input) (int, error) {
	if err := a.record(ctx, in); err != nil {
		return 0, err
	}
	var n int
	err := a.db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM orders WHERE tenant = $1 AND customer_hash = $2 AND status IN `+openStatuses+`)
		     + (SELECT count(*) FROM refunds r JOIN orders o ON o.id = r.order_id
		        WHERE o.tenant = $1 AND o.customer_hash = $2 AND r.status = 'PENDING')`,
		in.Tenant, in.CustomerHash).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("open orders of a customer of %s: %w", in.Tenant, err)
	}
	return n, nil
}

// Found is what the erasure found of the customer, store by store.
type Found struct {
	Orders       int64 `json:"orders"`
	ReplayBodies int64 `json:"replay_bodies"`
	Events       int64 `json:"events"`
	Refunds      int64 `json:"refunds"`
	Letters      int64 `json:"letters"`
	Histories    int64 `json:"histories"`
}

// customerField is the customer's ID in a stored answer (wire.Order's JSON).
var customerField = regexp.MustCompile(`"customer_id":"(?:[^"\\]|\\.)*"`)

// Scrub erases what is not sealed under the customer's key: the customer's ID in
// the answers stored for replays (rewritten in place: a replay answers the
// order with personal.Erased in its place, as a read does), and counts what
// the key's destruction erases.
func (a *Activities) ErasureScrub(ctx context.Context, in Input) (Found, error) {
	rows, err := a.db.Query(ctx, `
		SELECT i.key, i.response_body FROM idempotency_keys i
		JOIN orders o ON o.workflow_id = i.workflow_id
		WHERE o.tenant = $1 AND o.customer_hash = $2 AND i.tenant = $1 AND i.response_body IS NOT NULL`,
		in.Tenant, in.CustomerHash)
	if err != nil {
		return Found{}, fmt.Errorf("stored answers of a customer: %w", err)
	}
	type body struct {
		key  string
		body []byte
	}
	var bodies []body
	for rows.Next() {
		var b body
		if err := rows.Scan(&b.key, &b.body); err != nil {
			return Found{}, fmt.Errorf("stored answers of a customer: %w", err)
		}
		bodies = append(bodies, b)
	}
	if err := rows.Err(); err != nil {
		return Found{}, fmt.Errorf("stored answers of a customer: %w", err)
	}
	var f Found
	for _, b := range bodies {
		scrubbed := customerField.ReplaceAll(b.body, []byte(`"customer_id":"`+personal.Erased+`"`))
		if _, err := a.db.Exec(ctx, `UPDATE idempotency_keys SET response_body = $3 WHERE tenant = $1 AND key = $2`,
			in.Tenant, b.key, scrubbed); err != nil {
			return Found{}, fmt.Errorf("scrub a stored answer: %w", err)
		}
		f.ReplayBodies++
	}
	return a.count(ctx, in, f)
}

// count is what the key's destruction makes unreadable, store by store.
func (a *Activities) count(ctx context.Context, in Input, f Found) (Found, error) {
	err := a.db.QueryRow(ctx, `
		WITH mine AS (SELECT id, workflow_id FROM orders WHERE tenant = $1 AND customer_hash = $2)
		SELECT (SELECT count(*) FROM mine),
		       (SELECT count(*) FROM processed_events e JOIN mine ON mine.workflow_id = e.workflow_id WHERE e.tenant = $1),
		       (SELECT count(*) FROM refunds r JOIN mine ON mine.id = r.order_id WHERE r.tenant = $1),
		       (SELECT count(*) FROM customer_letters WHERE tenant = $1 AND customer_hash = $2)`,
		in.Tenant, in.CustomerHash).Scan(&f.Orders, &f.Events, &f.Refunds, &f.Letters)
	if err != nil {
		return Found{}, fmt.Errorf("count a customer's data: %w", err)
	}
	f.Histories = f.Orders + f.Refunds // each order's and each refund's workflow
	return f, nil
}

// Destroy destroys the customer's data keys.
func (a *Activities) ErasureDestroy(ctx context.Context, in Input) (custkeys.Destroyed, error) {
	return a.keys.Destroy(ctx, in.Tenant, in.CustomerHash)
}

// Sign signs the receipt and records it as the erasure's answer.
// at is the workflow's time, so a retried step signs the same receipt
// (Ed25519 signatures are deterministic).
func (a *Activities) ErasureSign(ctx context.Context, in Input, f Found, d custkeys.Destroyed, at time.Time) (receipt.Signed, error) {
	r := receipt.Receipt{ID: in.ID, Tenant: in.Tenant, CustomerHash: hex.EncodeToString(in.CustomerHash),
		ErasedAt: at.UTC().Truncate(time.Second), Stores: stores(f), Keys: []receipt.Key{}}
	for _, k := range d.Keys {
		r.Keys = append(r.Keys, receipt.Key{ID: k.ID, Fingerprint: k.Fingerprint, DestroyedAt: k.At.UTC()})
	}
	signed, err := receipt.Sign(r, a.keys.Signer())
	if err != nil {
		return receipt.Signed{}, err
	}
	body, err := json.Marshal(Answer{ID: in.ID, Status: StatusErased, Receipt: &signed})
	if err != nil {
		return receipt.Signed{}, fmt.Errorf("encode the erasure's answer: %w", err)
	}
	if err := a.record(ctx, in); err != nil {
		return receipt.Signed{}, err
	}
	if _, err := a.records.Move(ctx, in.Tenant, in.WorkflowID, StatusErased, true, body); err != nil {
		return receipt.Signed{}, err
	}
	return signed, nil
}

// record writes the erasure's record, WAITING, unless it has one: the Kafka
// ingress writes none (the HTTP path does, before its client hears of it), and
// Move moves only a record that exists. Sign asks again, for a run that was
// past its first look when this came.
func (a *Activities) record(ctx context.Context, in Input) error {
	body, err := json.Marshal(Answer{ID: in.ID, Status: StatusWaiting})
	if err != nil {
		return fmt.Errorf("encode the erasure's answer: %w", err)
	}
	_, err = a.records.Record(ctx, records.Record{Tenant: in.Tenant, Kind: KindName, ID: in.ID, WorkflowID: in.WorkflowID,
		Status: StatusWaiting, Fingerprint: in.Print, Body: body})
	return err
}

// Answer is what a client reads of an erasure: its receipt once erased.
type Answer struct {
	ID      string          `json:"id"`
	Status  string          `json:"status"`
	Receipt *receipt.Signed `json:"receipt,omitempty"`
}

// stores are the stores an erasure visits, with what each keeps.
func stores(f Found) []receipt.Store {
	return []receipt.Store{
		{Name: "orders", Affected: f.Orders, Kept: "amount, currency, items, dates, status, provider IDs, the customer's keyed hash"},
		{Name: "idempotency_keys", Affected: f.ReplayBodies, Kept: "the stored answer without the customer's ID"},
		{Name: "processed_events", Affected: f.Events, Kept: "event IDs and workflow IDs (nothing personal)"},
		{Name: "refunds", Affected: f.Refunds, Kept: "amounts, reasons, provider IDs (nothing personal)"},
		{Name: "temporal", Affected: f.Histories, Kept: "histories; their personal values are sealed under the destroyed key"},
		{Name: "dead_letters", Affected: f.Letters, Kept: "letters in Kafka, sealed under the destroyed key, until the topic's retention"},
		{Name: "customer_keys", Affected: 0, Kept: "each key's ID, fingerprint and times; its material is destroyed"},
		{Name: "outbound_events", Affected: 0, Kept: "orders.events carries no personal data"},
	}
}
