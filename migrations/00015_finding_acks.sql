-- +goose NO TRANSACTION
-- +goose Up

-- A finding is a queue item an operator acknowledges (`worker findings ack`):
-- when, by whom, and why. NULL until then; a pass that records the finding again
-- leaves them as they are.
--
-- Adding nullable columns changes metadata only, but under a lock that waits for
-- the statements in flight (a pass recording findings): each attempt waits at most
-- 10 ms, then lets the traffic through and tries again.
-- +goose StatementBegin
DO $$
BEGIN
    FOR attempt IN 1..500 LOOP
        BEGIN
            SET LOCAL lock_timeout = '10ms';
            ALTER TABLE reconcile_findings ADD COLUMN IF NOT EXISTS acknowledged_at timestamptz,
                                           ADD COLUMN IF NOT EXISTS acknowledged_by text,
                                           ADD COLUMN IF NOT EXISTS ack_note text;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.05);
        END;
    END LOOP;
    RAISE EXCEPTION 'reconcile_findings stayed busy: the columns were not added';
END
$$;
-- +goose StatementEnd

-- The open findings (not acknowledged), oldest first: `worker findings list --open`.
-- A build cut short leaves an invalid index, dropped on the next attempt.
DROP INDEX CONCURRENTLY IF EXISTS reconcile_findings_open;
CREATE INDEX CONCURRENTLY reconcile_findings_open ON reconcile_findings (found_at) WHERE acknowledged_at IS NULL;

-- +goose Down
DROP INDEX IF EXISTS reconcile_findings_open;
ALTER TABLE reconcile_findings DROP COLUMN ack_note;
ALTER TABLE reconcile_findings DROP COLUMN acknowledged_by;
ALTER TABLE reconcile_findings DROP COLUMN acknowledged_at;
