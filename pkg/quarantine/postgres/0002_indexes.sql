-- What the DynamoDB table's sparse index and its Queries did: the holds
-- not released, by queue and time held (Holds), and each group's messages
-- still parked in sequence order (the oldest parked after the one done or
-- discarded, and the oldest of all when a redrive begins), so that neither
-- reads the group's tombstones; and what its TTL did: the tombstones by
-- expiry (PurgeExpired).

CREATE INDEX quarantine_holds_not_released ON quarantine_holds (queue, held_at)
    WHERE state <> 'released';

CREATE INDEX quarantine_messages_parked ON quarantine_messages (queue, group_id, seq)
    WHERE status = 'parked';

CREATE INDEX quarantine_holds_expiry ON quarantine_holds (expires_at)
    WHERE expires_at IS NOT NULL;

CREATE INDEX quarantine_messages_expiry ON quarantine_messages (expires_at)
    WHERE expires_at IS NOT NULL;
