-- +goose NO TRANSACTION
-- +goose Up

-- dispute: the status of the latest dispute of an order that had ended
-- (CANCELLED, FAILED, REFUNDED) when its bank disputed the payment: such an order
-- keeps its status, and shows the dispute here. NULL for none.
--
-- Adding a nullable column changes metadata only, but under a lock that waits for
-- the statements in flight: each attempt waits at most 10 ms, then lets the
-- traffic through and tries again.
-- +goose StatementBegin
DO $$
BEGIN
    FOR attempt IN 1..500 LOOP
        BEGIN
            SET LOCAL lock_timeout = '10ms';
            ALTER TABLE orders ADD COLUMN IF NOT EXISTS dispute text;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.05);
        END;
    END LOOP;
    RAISE EXCEPTION 'orders stayed busy: the column was not added';
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE orders DROP COLUMN dispute;
