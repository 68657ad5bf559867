-- +goose Up

-- The dead letters `worker dlq redrive` re-published, by what they are: a digest
-- of where the original message came from (topic, partition, offset, consumer
-- group) and of its value. dlq_redrives knew them by their offset in the
-- dead-letter topic, so once that topic was recreated its new letters, at the same
-- offsets, counted as redriven before. dlq_redrives is no longer read; a later
-- release drops it.
CREATE TABLE IF NOT EXISTS dlq_redriven_letters (
    letter        bytea       PRIMARY KEY,
    dlq_topic     text        NOT NULL,
    dlq_partition int         NOT NULL,
    dlq_offset    bigint      NOT NULL,
    event_id      text        NOT NULL,
    redriven_at   timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE dlq_redriven_letters;
