-- +goose NO TRANSACTION
-- +goose Up

-- The pruner deletes each table's rows past their retention in batches, oldest
-- first: every table it prunes has an index on the column its age is read from
-- (idempotency_keys.expires_at, webhook_events.received_at and
-- reconcile_findings.found_at have theirs). A build cut short leaves an invalid
-- index, dropped on the next attempt.
DROP INDEX CONCURRENTLY IF EXISTS processed_events_processed;
CREATE INDEX CONCURRENTLY processed_events_processed ON processed_events (processed_at);
DROP INDEX CONCURRENTLY IF EXISTS dlq_redriven_letters_redriven;
CREATE INDEX CONCURRENTLY dlq_redriven_letters_redriven ON dlq_redriven_letters (redriven_at);
-- Orders leave only when ORDERS_RETENTION is set, and only closed ones, oldest
-- change first.
DROP INDEX CONCURRENTLY IF EXISTS orders_updated;
CREATE INDEX CONCURRENTLY orders_updated ON orders (updated_at);

-- Nothing has read dlq_redrives since 00008 (dlq_redriven_letters replaced it).
DROP TABLE IF EXISTS dlq_redrives;

-- +goose Down
DROP INDEX IF EXISTS orders_updated;
DROP INDEX IF EXISTS dlq_redriven_letters_redriven;
DROP INDEX IF EXISTS processed_events_processed;
CREATE TABLE IF NOT EXISTS dlq_redrives (
    dlq_topic     text        NOT NULL,
    dlq_partition int         NOT NULL,
    dlq_offset    bigint      NOT NULL,
    event_id      text        NOT NULL,
    redriven_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (dlq_topic, dlq_partition, dlq_offset)
);
