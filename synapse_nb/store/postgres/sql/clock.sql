-- Migration 5: the write clock never overflows (issue 26).
--
-- next_stamp (migration 1) stepped 1 µs past the project's last stamp whatever it held: a clock an older version
-- let an import set to 9999-12-31T23:59:59.999999Z made the next stamp year 10000, which the ts domain refuses,
-- so every later write failed, even after the record was deleted. A clock outside the sane window
-- (1970-01-01 <= clock < 2100-01-01, fixed-width UTC text; synapse_nb._util.sane_ts) is now ignored, never
-- stepped past: the stamp is p_now and the clock is back in the window. A sane clock keeps the order guarantee
-- (strictly increasing stamps). The same rule as the local vault's stamp (synapse_nb._util.next_stamp).
-- CREATE OR REPLACE keeps the function's owner and its grants (security.sql).

CREATE OR REPLACE FUNCTION next_stamp(p_now ts) RETURNS ts
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT 1 FROM gate_stats WHERE id = 1 FOR NO KEY UPDATE;
    INSERT INTO meta AS m (key, value) VALUES ('clock', p_now)
    ON CONFLICT (key) DO UPDATE
        SET value = CASE
            WHEN m.value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$'
                 AND m.value >= '1970-01-01T00:00:00.000000Z' AND m.value < '2100-01-01T00:00:00.000000Z'
            THEN greatest(excluded.value, fmt_ts(m.value::timestamptz + interval '1 microsecond'))
            ELSE excluded.value
        END
    RETURNING value;
END;
