-- +goose NO TRANSACTION
-- +goose Up

-- Event IDs are chosen by producers and unique per producer only: the dedup of the
-- Kafka ingress is scoped by tenant, and keeps the fingerprint of the event's order
-- so that an eventId reused with another order is told apart from a redelivery.
-- Fingerprints start with their version byte (1); rows from before carry none.
--
-- The new primary key's index is built first, concurrently, so the swap is a brief
-- change of metadata. A build cut short leaves an invalid index, dropped on the
-- next attempt.
DROP INDEX CONCURRENTLY IF EXISTS processed_events_tenant_pkey;
CREATE UNIQUE INDEX CONCURRENTLY processed_events_tenant_pkey ON processed_events (consumer_group, tenant, event_id);
-- +goose StatementBegin
BEGIN;
ALTER TABLE processed_events DROP CONSTRAINT processed_events_pkey;
ALTER TABLE processed_events ADD CONSTRAINT processed_events_pkey PRIMARY KEY USING INDEX processed_events_tenant_pkey;
ALTER TABLE processed_events ADD COLUMN IF NOT EXISTS fingerprint bytea;
COMMIT;
-- +goose StatementEnd

COMMENT ON COLUMN idempotency_keys.fingerprint IS
    'version byte (1) + SHA-256 of the canonical request; 32 bytes without a version byte: version 0';
COMMENT ON COLUMN processed_events.fingerprint IS
    'version byte (1) + SHA-256 of the canonical order; NULL: recorded before fingerprints';

-- Lookups of an order by the key or eventId that made it.
DROP INDEX CONCURRENTLY IF EXISTS processed_events_workflow;
CREATE INDEX CONCURRENTLY processed_events_workflow ON processed_events (workflow_id);

-- +goose Down
DROP INDEX IF EXISTS processed_events_workflow;
ALTER TABLE processed_events DROP COLUMN fingerprint;
ALTER TABLE processed_events DROP CONSTRAINT processed_events_pkey;
ALTER TABLE processed_events ADD PRIMARY KEY (consumer_group, event_id);
