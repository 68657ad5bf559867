-- +goose NO TRANSACTION
-- +goose Up

-- The reconciler reads the refund requests left PENDING, oldest change first,
-- to end those whose workflow no longer runs: a partial index keeps that read
-- as cheap as the few rows in flight, whatever the table's size. Built without
-- locking the table; a build cut short leaves an invalid index, dropped on the
-- next attempt.
DROP INDEX CONCURRENTLY IF EXISTS refunds_pending;
CREATE INDEX CONCURRENTLY refunds_pending ON refunds (updated_at) WHERE status = 'PENDING';

-- +goose Down
DROP INDEX IF EXISTS refunds_pending;
