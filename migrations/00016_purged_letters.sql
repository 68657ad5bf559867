-- +goose NO TRANSACTION
-- +goose Up

-- A dead letter an operator discarded (`worker dlq purge`) is settled like a
-- redriven one, so no redrive sends it: purged_by names who, NULL for a letter
-- that was redriven. Adding a nullable column changes metadata only, under a lock
-- that waits for the statements in flight: each attempt waits at most 10 ms, then
-- lets the traffic through and tries again.
-- +goose StatementBegin
DO $$
BEGIN
    FOR attempt IN 1..500 LOOP
        BEGIN
            SET LOCAL lock_timeout = '10ms';
            ALTER TABLE dlq_redriven_letters ADD COLUMN IF NOT EXISTS purged_by text;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.05);
        END;
    END LOOP;
    RAISE EXCEPTION 'dlq_redriven_letters stayed busy: the column was not added';
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE dlq_redriven_letters DROP COLUMN purged_by;
