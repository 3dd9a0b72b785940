-- The rules every row the store writes already keeps (View.validate: a
-- known status, version 1 or later, nothing negative; an optional
-- attribute is NULL, never empty or zero), held by the database too, so
-- that no other writer (a hand edit, a future migration) leaves a row no
-- decision of the store expects. Adding a constraint checks the rows there
-- are, under the migration's lock; the store never wrote one that fails.

ALTER TABLE projection_views
	ADD CONSTRAINT projection_views_status CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
	ADD CONSTRAINT projection_views_counts CHECK (version >= 1 AND generation >= 0 AND progress >= 0),
	ADD CONSTRAINT projection_views_optional CHECK (result_key <> '' AND result_size > 0 AND error_code <> '');

ALTER TABLE projection_cursors
	ADD CONSTRAINT projection_cursors_status CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
	ADD CONSTRAINT projection_cursors_counts CHECK (version >= 1 AND progress >= 0);
