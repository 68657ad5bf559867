-- +goose NO TRANSACTION
-- +goose Up

-- The payment provider's webhook events, one row per event ID. The API process
-- handling an event claims its row (locked_until) before it acts and marks it
-- handled, with what it did, before it answers 2xx: a delivery of a handled event
-- is answered 200 and does nothing; one of an event being handled elsewhere is
-- answered 409, so the provider delivers it again; a claim whose process died
-- expires, and the next delivery handles the event. Rows are pruned a week after
-- they arrived, past the provider's three days of retries.
CREATE TABLE IF NOT EXISTS webhook_events (
    event_id     text PRIMARY KEY,
    type         text        NOT NULL,
    intent_id    text,
    outcome      text,       -- NULL until handled: woke | no_change | unknown_intent | ignored
    deliveries   int         NOT NULL DEFAULT 1,
    locked_until timestamptz,
    received_at  timestamptz NOT NULL DEFAULT now(),
    handled_at   timestamptz
);
CREATE INDEX IF NOT EXISTS webhook_events_received ON webhook_events (received_at);

-- Orders waiting on their customer are open payments too: the wider index is built
-- beside the old one, which it then replaces (a rename takes a lock that lets reads
-- and writes through).
DROP INDEX CONCURRENTLY IF EXISTS orders_payment_open_next;
CREATE INDEX CONCURRENTLY orders_payment_open_next ON orders (status, updated_at)
    WHERE status IN ('PAYMENT_PENDING', 'PAYMENT_UNKNOWN', 'PAYMENT_ACTION_REQUIRED');
DROP INDEX CONCURRENTLY IF EXISTS orders_payment_open;
ALTER INDEX orders_payment_open_next RENAME TO orders_payment_open;

-- +goose Down
DROP INDEX orders_payment_open;
CREATE INDEX orders_payment_open ON orders (status, updated_at)
    WHERE status IN ('PAYMENT_PENDING', 'PAYMENT_UNKNOWN');
DROP TABLE webhook_events;
