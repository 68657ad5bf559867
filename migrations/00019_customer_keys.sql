-- +goose Up

-- Each customer's data key, sealed under PAYLOAD_KEYS: personal values (an
-- order's customer ID and payment method, a dead letter's value) are sealed under
-- it, so destroying it erases them wherever a copy went. A destroyed key keeps
-- its row (ID, fingerprint, times) as the record of its destruction; its material
-- (wrapped) is gone.
CREATE TABLE IF NOT EXISTS customer_keys (
    tenant        text        NOT NULL,
    customer_hash bytea       NOT NULL,                 -- keyed hash of the customer's ID
    key_id        text        NOT NULL UNIQUE,
    wrapped       bytea,                                -- NULL once destroyed
    fingerprint   text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    destroyed_at  timestamptz,
    PRIMARY KEY (tenant, customer_hash, key_id)
);
-- One live key per customer: one erased and back gets a new one.
CREATE UNIQUE INDEX IF NOT EXISTS customer_keys_live ON customer_keys (tenant, customer_hash)
    WHERE destroyed_at IS NULL;

-- The deployment's own secrets (the customer hash key, the receipt signing key),
-- sealed under PAYLOAD_KEYS, made once by the first process that needs them.
CREATE TABLE IF NOT EXISTS deployment_secrets (
    name       text PRIMARY KEY,
    wrapped    bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Dead letters sealed under a customer's key: what an erasure counts. The letter
-- itself is in Kafka, where it cannot be deleted, only made unreadable.
CREATE TABLE IF NOT EXISTS customer_letters (
    tenant        text        NOT NULL,
    customer_hash bytea       NOT NULL,
    topic         text        NOT NULL,
    event_id      text        NOT NULL,
    key_id        text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, customer_hash, topic, event_id)
);
-- Retention prunes them oldest first (REDRIVES_RETENTION).
CREATE INDEX IF NOT EXISTS customer_letters_created ON customer_letters (created_at);

-- The keyed hash of an order's customer: what GET /v1/orders?customer_id= and an
-- erasure find it by, and what stays when the customer is erased. NULL on rows
-- written before personal values were sealed (their customer_id is plain).
ALTER TABLE orders ADD COLUMN IF NOT EXISTS customer_hash bytea;

-- +goose Down
ALTER TABLE orders DROP COLUMN IF EXISTS customer_hash;
DROP TABLE customer_letters;
DROP TABLE deployment_secrets;
DROP TABLE customer_keys;
