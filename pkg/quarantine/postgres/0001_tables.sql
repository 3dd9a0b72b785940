-- The quarantine's holds and parked messages (pkg/quarantine's
-- PostgresStore; its package documentation describes each column).
-- Times are Unix milliseconds, as on DynamoDB; expires_at is in Unix
-- seconds, set on tombstones (released holds, messages done or discarded)
-- for a clean-up to delete after TombstoneTTL. A group is bytea: a Kafka
-- key may hold any byte, NUL included, which text cannot. So are the
-- producer's and the handler's strings (message id, body, deduplication
-- id, causes): kept byte for byte.

CREATE TABLE quarantine_holds (
    queue       text COLLATE "C" NOT NULL,
    group_id    bytea  NOT NULL,
    state       text   NOT NULL CHECK (state IN ('held', 'draining', 'released')),
    epoch       bigint NOT NULL CHECK (epoch >= 0),
    parked      bigint NOT NULL CHECK (parked >= 0),
    cause       bytea  NOT NULL,
    seq_from    text COLLATE "C" NOT NULL, -- '' when none
    seq_through text COLLATE "C" NOT NULL,
    seq_next    text COLLATE "C" NOT NULL,
    held_at     bigint NOT NULL,
    updated_at  bigint NOT NULL,
    fail_seq    text COLLATE "C" NOT NULL, -- '' when no record failed
    fail_count  bigint NOT NULL,
    fail_cause  bytea  NOT NULL,
    version     bigint NOT NULL CHECK (version >= 1), -- raised by every write: the condition of the next
    expires_at  bigint,
    PRIMARY KEY (queue, group_id),
    -- the count's invariants, so that a write breaking them fails whole
    CHECK (state <> 'released' OR (parked = 0 AND seq_next = '')),
    CHECK (state <> 'draining' OR parked > 0)
);

CREATE TABLE quarantine_messages (
    queue            text COLLATE "C" NOT NULL,
    group_id         bytea  NOT NULL,
    seq              text COLLATE "C" NOT NULL CHECK (seq ~ '^[0-9]{40}$'),
    status           text   NOT NULL CHECK (status IN ('parked', 'done', 'discarded')),
    message_id       bytea  NOT NULL,
    body             bytea  NOT NULL,
    body_key         text   NOT NULL,
    body_md5         text   NOT NULL,
    body_size        bigint NOT NULL,
    attributes       jsonb,            -- NULL when none
    deduplication_id bytea  NOT NULL,
    nonce            text   NOT NULL,
    receive_count    bigint NOT NULL,
    cause            bytea  NOT NULL,
    parked_at        bigint NOT NULL,
    updated_at       bigint NOT NULL,
    expires_at       bigint,
    kafka            boolean NOT NULL, -- a Kafka record: record_key, value and headers are its
    record_key       bytea,
    value            bytea,
    headers          jsonb,            -- [{"key": base64, "value": base64 or null}], NULL when none
    PRIMARY KEY (queue, group_id, seq)
);
