-- The listings' indexes, the DynamoDB table's sparse "live" and "finished"
-- indexes: partial, so each holds exactly the live or the final jobs.

-- Live jobs by last transition, ties by id (Lister, LivePager).
CREATE INDEX jobs_live ON jobs (updated_at, job_id) WHERE status IN ('pending', 'running');

-- finished_key is jobs.FinishedKey(job_id, updated_at) of a final job (a
-- final job never changes, so updated_at is when it ended): the time in
-- epoch ms, at least 13 digits, '#', the id. NULL for a live job. Rows
-- that were final before this migration get theirs too.
ALTER TABLE jobs ADD COLUMN finished_key text COLLATE "C" GENERATED ALWAYS AS (
    CASE WHEN status IN ('completed', 'failed', 'cancelled') THEN
        lpad(greatest(updated_at, 0)::text, greatest(13, length(greatest(updated_at, 0)::text)), '0') || '#' || job_id
    END) STORED;
CREATE INDEX jobs_finished ON jobs (finished_key) WHERE finished_key IS NOT NULL;

-- What PurgeExpired deletes, oldest first.
CREATE INDEX jobs_expiry ON jobs (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX job_intents_expiry ON job_intents (expires_at);
