-- The projection's three tables (internal/app/projection, PostgresStore).
-- The DynamoDB store keeps the cursors beside the totals in one table so
-- that one transaction writes both; here any statement spans tables, so
-- each kind of row has its own. Times are epoch milliseconds (bigint), the
-- numbers the DynamoDB items hold; an optional attribute the item lacks is
-- NULL.

-- One row per job: its newest snapshot.
CREATE TABLE projection_views (
	job_id      text   NOT NULL PRIMARY KEY,
	tenant      text   NOT NULL,
	status      text   NOT NULL,
	generation  bigint NOT NULL,
	version     bigint NOT NULL,
	progress    bigint NOT NULL,
	result_key  text,
	result_size bigint,
	error_code  text,
	updated_at  bigint
);

-- One row per tenant: its counters.
CREATE TABLE projection_totals (
	tenant    text   NOT NULL PRIMARY KEY,
	processed bigint NOT NULL,
	completed bigint NOT NULL
);

-- One row per job and tenant: the version, progress and status of the last
-- snapshot counted in the tenant's totals. No row is the zero cursor.
CREATE TABLE projection_cursors (
	tenant   text   NOT NULL,
	job_id   text   NOT NULL,
	version  bigint NOT NULL,
	progress bigint NOT NULL,
	status   text   NOT NULL,
	PRIMARY KEY (tenant, job_id)
);
