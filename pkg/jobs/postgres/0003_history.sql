-- The bounded transition history (jobitem.Job's History): a JSON object
-- of at most 20 slots, "h0" to "h19", the entry of version v in slot
-- "h" || v % 20 (jobitem.HistorySlot, EncodeTransition), merged by each
-- transition's statement. NULL on the rows written before it: their
-- history begins at their next transition.
ALTER TABLE jobs ADD COLUMN history jsonb;
