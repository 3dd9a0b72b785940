-- A tenant's totals spread over rows (tenant, shard), summed on read, so
-- that the tenant's jobs do not all wait for one row's lock: each event
-- that adds locks the row of its job's shard (PostgresConfig.Shards). The
-- cursors are not sharded (one row per job already), so the count may
-- change at any time: a read sums whatever rows there are. The rows there
-- are become shard 0.

ALTER TABLE projection_totals ADD COLUMN shard integer NOT NULL DEFAULT 0 CHECK (shard >= 0);
ALTER TABLE projection_totals DROP CONSTRAINT projection_totals_pkey;
ALTER TABLE projection_totals ADD PRIMARY KEY (tenant, shard);
