-- +goose Up

-- The dead letters `worker dlq redrive` has re-published, by where they sit in the
-- dead-letter topic: a second redrive skips them, so each is sent back once.
CREATE TABLE dlq_redrives (
    dlq_topic   text        NOT NULL,
    dlq_partition int       NOT NULL,
    dlq_offset  bigint      NOT NULL,
    event_id    text        NOT NULL,
    redriven_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (dlq_topic, dlq_partition, dlq_offset)
);

-- +goose Down
DROP TABLE dlq_redrives;
