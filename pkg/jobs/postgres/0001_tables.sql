-- The job store's tables (pkg/jobs PostgresStore). Times the DynamoDB
-- item keeps in epoch milliseconds are bigint epoch milliseconds here too,
-- so that conditions compare the same numbers; expires_at is epoch seconds.
-- Column names are the item's attribute names (pkg/jobs/jobitem Attr*):
-- a row rendered by to_jsonb is the job's image (jobitem.FromPostgresImage).
-- Ids sort as Go compares strings, byte by byte: COLLATE "C".

-- One row per job.
CREATE TABLE jobs (
    job_id           text COLLATE "C" PRIMARY KEY,
    intent_id        text   NOT NULL,
    tenant           text   NOT NULL,
    status           text   NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
    generation       bigint NOT NULL,
    version          bigint NOT NULL,
    lease_owner      text,             -- NULL before the first claim
    lease_expires_at bigint,           -- epoch ms; NULL before the first claim
    result_key       text,             -- the result's columns: NULL unless completed
    result_sha256    text,
    result_size      bigint,
    progress         bigint NOT NULL,
    outbox           jsonb  NOT NULL,  -- the message of the last transition: {id, type, version[, payload]}
    spec             jsonb,            -- a map of strings; NULL when empty
    error            jsonb,            -- {code, message}; NULL unless failed or cancelled
    created_at       bigint NOT NULL,  -- epoch ms
    updated_at       bigint NOT NULL,  -- epoch ms
    expires_at       bigint            -- epoch s; NULL until final (PostgreSQL has no TTL: PurgeExpired)
);

-- One row per intent: what makes Create idempotent (the DynamoDB table's
-- intent marker "intent#<tenant>#<intent id>").
CREATE TABLE job_intents (
    tenant      text   NOT NULL,
    intent_id   text   NOT NULL,
    job_id      text COLLATE "C" NOT NULL, -- the job the intent created
    spec_sha256 text   NOT NULL,
    created_at  bigint NOT NULL,          -- epoch ms
    expires_at  bigint NOT NULL,          -- epoch s
    PRIMARY KEY (tenant, intent_id)
);

-- The transactional outbox: one row per transition, written by the
-- transition's own statement, read and deleted by the relay. image is the
-- job after the transition, prev_image before it (NULL for a creation).
CREATE TABLE job_outbox (
    job_id     text COLLATE "C" NOT NULL, -- as jobs.job_id, so a join of the two uses the primary key
    version    bigint NOT NULL,
    image      jsonb  NOT NULL,
    prev_image jsonb,
    created_at bigint NOT NULL, -- epoch ms
    PRIMARY KEY (job_id, version)
);
