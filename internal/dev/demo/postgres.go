package demo

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The demo on PostgreSQL (template-postgres.yaml, STORE=postgres) runs the
// same scenario on the stack's PostgreSQL server, and checks the same
// invariants reading the jobs, the views, the totals and the holds there
// (the stores the functions use). Worker A's late accept of the running
// example is held by the fault proxy's PostgreSQL mode: every function
// reaches the database through it (the DSN the pipeline gives them names
// the proxy), it holds the accept's round trip, and the demo releases it
// on a connection of the proxy's own once generation 2 has won, where the
// statement's WHERE refuses it.

// postgres says whether the demo runs on PostgreSQL.
func (d *demoRun) postgres() bool { return d.sum.Store == pipeline.StorePostgres }

// holdPostgres starts the proxy that holds worker A's accept of
// exampleJob on its way to PostgreSQL, and points the functions' DSN in
// endpoints (and this process's) at it. stop closes it.
func (d *demoRun) holdPostgres(exampleJob string, endpoints []string) ([]string, func(), error) {
	u, err := url.Parse(d.state.Postgres)
	if err != nil || u.Host == "" {
		return nil, nil, fmt.Errorf("demo: the stack's PostgreSQL DSN %q names no host", d.state.Postgres)
	}
	d.pgHold, err = faultproxy.NewPostgres(faultproxy.PostgresConfig{Target: u.Host,
		Hold: func(op, sql string, args []string) bool {
			// The first accept of the example: the jobs store's one
			// statement that sets a result (pkg/jobs updateStatement),
			// for the example's job (its first parameter).
			return op == "WITH" && strings.Contains(sql, "UPDATE jobs SET") && strings.Contains(sql, "result_key = ") &&
				len(args) > 0 && args[0] == exampleJob
		}})
	if err != nil {
		return nil, nil, err
	}
	u.Host = d.pgHold.Addr
	proxied := u.String()
	d.o.Setenv(pgopen.DSNVar, proxied)
	i := slices.IndexFunc(endpoints, func(kv string) bool { return strings.HasPrefix(kv, pgopen.DSNVar+"=") })
	if i < 0 {
		endpoints = append(endpoints, "")
		i = len(endpoints) - 1
	}
	endpoints[i] = pgopen.DSNVar + "=" + proxied
	return endpoints, func() { _ = d.pgHold.Close() }, nil
}

// acceptRefused says whether the jobs store's accept statement, released
// late, was refused: it answers one row (written, image), written false
// (a bool in the binary format is one byte 0, in the text format "f").
func acceptRefused(res faultproxy.PostgresReleased) bool {
	if res.Err != nil || len(res.Rows) != 1 || len(res.Rows[0]) != 2 {
		return false
	}
	w := string(res.Rows[0][0])
	return w == "\x00" || w == "f"
}

// openDatabase opens the stack's PostgreSQL database, as the functions do.
func (d *demoRun) openDatabase() error {
	env := startup.NewEnvFrom(map[string]string{pgopen.DSNVar: d.state.Postgres})
	d.db = pgopen.Open(env, aws.Config{})
	if err := env.Err(); err != nil {
		return fmt.Errorf("demo: the stack's PostgreSQL: %w", err)
	}
	return nil
}

// jobStore is the jobs' store of the template's store.
func (d *demoRun) jobStore() (jobs.Store, error) {
	if d.postgres() {
		return jobs.NewPostgresStore(jobs.PostgresConfig{DB: d.db})
	}
	return jobs.NewDynamoStore(jobs.DynamoConfig{Client: d.state.DynamoDBClient(), Table: d.res.Resources["JobsTable"]})
}

// projectionStore is the views' and totals' store of the template's store.
func (d *demoRun) projectionStore() (projection.Store, error) {
	if d.postgres() {
		return projection.NewPostgresStore(projection.PostgresConfig{DB: d.db})
	}
	return projection.NewDynamoStore(projection.DynamoConfig{Client: d.state.DynamoDBClient(), Tables: projection.Tables{Views: d.res.Resources["ViewsTable"], Totals: d.res.Resources["TotalsTable"]}})
}

// quarantineStore is the holds' store of the template's store.
func (d *demoRun) quarantineStore() (quarantine.Store, error) {
	if d.postgres() {
		return quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: d.db})
	}
	return quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: d.ddb, Table: d.res.Resources["QuarantineTable"]})
}

// postgresLeft counts what is left on PostgreSQL with SQS: the queues'
// messages (there is no stream, so no stream failure queue) and the
// outbox's rows (outboxLeft).
func (d *demoRun) postgresLeft(ctx context.Context) (int, error) {
	left, err := d.queuesHold(ctx, "CommandsQueue", "CommandsDLQ", "EventsQueue", "EventsDLQ")
	if err != nil {
		return 0, err
	}
	rows, err := d.outboxLeft(ctx)
	return left + rows, err
}

// outboxLeft counts the outbox's rows: each a transition the relay has
// not published.
func (d *demoRun) outboxLeft(ctx context.Context) (int, error) {
	var rows int
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM job_outbox`).Scan(&rows); err != nil {
		return 0, fmt.Errorf("demo: the outbox: %w", err)
	}
	if rows > 0 {
		d.say("LEFT: job_outbox holds %d rows the relay has not published", rows)
	}
	return rows, nil
}
