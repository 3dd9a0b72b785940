//go:build integration

package test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// BenchmarkStores runs the arbiter's and the projection's stores side by
// side in one run: DynamoDB Local (an emulator, a JVM on this machine)
// against a PostgreSQL 18 server on this machine. It is not DynamoDB
// against Aurora: neither figure says what the two services do, only what
// the same job costs in round trips on each store and how the two local
// processes bear concurrency on the same (shared, 2-core) machine.
//
// An op is one job's life on the stores, as the pipeline writes it: the
// intake's create, the worker's claim, one renew with progress and the
// accept, and the projector's apply of each event those transitions emit
// (outbox.FromTransition of each transition, as the relay builds them:
// job.started, job.progress, job.completed), in order, on the same
// goroutine. No queue, no relay, no S3: the stores alone. "groups=K" is K
// jobs in flight at once (K goroutines, each running jobs one after
// another), as BenchmarkPipeline's groups; the jobs belong to its eight
// tenants in turn, so the tenants' totals rows are shared as they are in
// service.
//
// Round trips per job: on DynamoDB Local the API requests the SDK sent
// (pkg/awstest's counter, after the retry middleware: a retried request,
// a transaction cancelled by a concurrent one and sent again, count each
// time); on PostgreSQL the statements the functions' driver
// (internal/base/pgwire) sent, counted by its Config.Trace, which it calls
// before each round trip: each statement (a transaction's BEGIN and COMMIT
// included) is one, sent as the unnamed statement, and nothing is
// prepared. roundtrips/job is requests/job on one and statements/job on
// the other. The PostgreSQL pool is bounded at 16 connections (the most a
// test may hold on the server the helpers share); BenchmarkPostgresPool
// measures the bound. Each reports the 1-minute load average when it ended
// (load1): the machine is shared.
func BenchmarkStores(b *testing.B) {
	for _, store := range []string{"dynamodb-local", "postgres"} {
		for _, groups := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("store=%s/groups=%d", store, groups), func(b *testing.B) {
				var s *benchStores
				if store == "postgres" {
					s = postgresBenchStores(b, benchPostgresConns)
				} else {
					s = dynamoBenchStores(b)
				}
				s.run(b, groups)
				s.report(b)
				reportLoad(b)
			})
		}
	}
}

// benchPostgresConns is BenchmarkStores' pool bound: pgtest's guidance
// for the shared server.
const benchPostgresConns = 16

// workerLanes is the worker's lane concurrency: a worker invocation runs
// up to ten lanes at once (internal/lambdawire's lanesPerBatch, the
// commands mapping's BatchSize of 10), each with its own store calls on
// the function instance's one pool.
const workerLanes = 10

// BenchmarkPostgresPool measures one function instance's bounded pool
// under the worker's concurrency: ten lanes at once (workerLanes) on a
// pool of POSTGRES_MAX_CONNS 1, 4 (the wiring's default) and 16
// connections, each job the same life as BenchmarkStores'. Beside jobs/s
// it reports database/sql's own account of the pool (DBStats): how often
// a statement waited for a connection (waits/job) and how long
// (wait-ms/job, summed over the lanes). Statements go as the functions'
// driver sends them: each the unnamed statement of the extended protocol,
// one round trip, nothing kept on the session (what RDS Proxy needs not to
// pin it, see docs/BENCHMARKS.md).
func BenchmarkPostgresPool(b *testing.B) {
	for _, conns := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			s := postgresBenchStores(b, conns)
			before := s.db.Stats()
			s.run(b, workerLanes)
			after := s.db.Stats()
			s.report(b)
			b.ReportMetric(float64(after.WaitCount-before.WaitCount)/float64(b.N), "waits/job")
			b.ReportMetric(float64((after.WaitDuration-before.WaitDuration).Microseconds())/1000/float64(b.N), "wait-ms/job")
			b.ReportMetric(float64(after.MaxOpenConnections), "max-conns")
			reportLoad(b)
		})
	}
}

// benchStores is a job store and a projection store on one backend, with
// their round trips counted.
type benchStores struct {
	jobs  jobs.Store
	proj  projection.Store
	db    *sql.DB // PostgreSQL's pool; nil on DynamoDB
	count func() (roundTrips int64)
	unit  string // "requests" or "statements"
	// longest is the length of the longest statement text sent (its
	// arguments travel apart, bound); nil on DynamoDB.
	longest *atomic.Int64
}

func dynamoBenchStores(b *testing.B) *benchStores {
	counter := &awstest.Requests{}
	client := awstest.DynamoDB(b, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, counter.Count(""))
		// DynamoDB Local sends no X-Amz-Crc32 with error responses.
		o.DisableValidateResponseChecksum = true
		// One client serves every group here, where each function
		// instance has its own: the standard retryer's token bucket
		// (one per client) would be drained by 100 groups' retries of
		// DynamoDB Local's 500s under load ("too long waiting for a lock.
		// This request will succeed in actual DynamoDB API") and fail
		// them. Without it every retry is still sent, and counted.
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.RateLimiter = ratelimit.None })
	})
	jobsTable := awstest.Table(b, client, jobs.Table(awstest.Name(b, "jobs")), jobs.AttrExpiresAt)
	tables := projection.Tables{Views: awstest.Name(b, "views"), Totals: awstest.Name(b, "totals")}
	awstest.Table(b, client, stringKeyedTable(tables.Views, "job_id"), "")
	awstest.Table(b, client, stringKeyedTable(tables.Totals, "tenant", "key"), "")
	js, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: client, Table: jobsTable})
	require.NoError(b, err)
	ps, err := projection.NewDynamoStore(projection.DynamoConfig{Client: client, Tables: tables})
	require.NoError(b, err)
	s := &benchStores{jobs: js, proj: ps, unit: "requests"}
	s.count = func() int64 {
		var n int64
		for _, v := range counter.Take() {
			n += int64(v)
		}
		return n
	}
	s.count()
	return s
}

// stringKeyedTable is the CreateTableInput of an on-demand table whose
// hash key (and range key, if given) are strings: the key schemas
// projection.Tables documents.
func stringKeyedTable(name, hash string, rangeKey ...string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest}
	for i, k := range append([]string{hash}, rangeKey...) {
		kind := types.KeyTypeHash
		if i > 0 {
			kind = types.KeyTypeRange
		}
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(k), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k), KeyType: kind})
	}
	return in
}

func postgresBenchStores(b *testing.B, conns int) *benchStores {
	trips := &roundTrips{}
	cfg := pgtest.Config(b)
	cfg.Trace = trips.trace
	db := sql.OpenDB(pgtest.Connector(b, cfg))
	b.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns) // as pgopen.Open: an idle connection is kept, not closed and dialled again
	ctx := b.Context()
	require.NoError(b, jobs.MigratePostgres(ctx, db))
	require.NoError(b, projection.MigratePostgres(ctx, db))
	js, err := jobs.NewPostgresStore(jobs.PostgresConfig{DB: db})
	require.NoError(b, err)
	ps, err := projection.NewPostgresStore(projection.PostgresConfig{DB: db})
	require.NoError(b, err)
	s := &benchStores{jobs: js, proj: ps, db: db, unit: "statements", longest: &trips.longest}
	s.count = func() int64 { return trips.statements.Swap(0) }
	s.count()
	trips.longest.Store(0) // the stores' statements, not the migrations' files
	return s
}

// roundTrips counts the round trips the driver makes (pgwire's
// Config.Trace, called before each) and keeps the length of the longest
// statement text, which RDS Proxy's 16 KB pinning condition concerns (the
// arguments are not in the text: they are bound).
type roundTrips struct{ statements, longest atomic.Int64 }

func (c *roundTrips) trace(_ context.Context, query string) {
	c.statements.Add(1)
	n := int64(len(query))
	for {
		old := c.longest.Load()
		if n <= old || c.longest.CompareAndSwap(old, n) {
			return
		}
	}
}

// run runs b.N jobs, groups at once, and fails the benchmark on the first
// error.
func (s *benchStores) run(b *testing.B, groups int) {
	ctx := b.Context()
	prefix := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var next atomic.Int64
	var events atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	b.ResetTimer()
	for range groups {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				n, err := s.job(ctx, fmt.Sprintf("%s-%d", prefix, i), benchTenants[i%int64(len(benchTenants))])
				events.Add(int64(n))
				if err != nil {
					once.Do(func() { first = err })
					next.Store(int64(b.N)) // stop the others
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	require.NoError(b, first)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	require.Equal(b, int64(3*b.N), events.Load(), "each job emits job.started, job.progress and job.completed")
}

// report reports the round trips per job since the stores were made.
func (s *benchStores) report(b *testing.B) {
	n := s.count()
	b.ReportMetric(float64(n)/float64(b.N), "roundtrips/job")
	b.ReportMetric(float64(n)/float64(b.N), s.unit+"/job")
	if s.longest != nil {
		b.ReportMetric(float64(s.longest.Load()), "longest-sql-bytes")
	}
}

// job runs one job's life (create, claim, renew, accept) and projects the
// events of its transitions in order; it returns how many it projected.
func (s *benchStores) job(ctx context.Context, id, tenant string) (int, error) {
	created, err := s.jobs.Create(ctx, jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: tenant})
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", id, err)
	}
	prev := created.Job
	projected := 0
	step := func(what string, cur jobs.Job, err error) error {
		if err != nil {
			return fmt.Errorf("%s %s: %w", what, id, err)
		}
		n, err := s.project(ctx, &prev, &cur)
		projected += n
		prev = cur
		return err
	}
	lease := func() time.Time { return time.Now().Add(time.Minute) }
	j, err := s.jobs.Claim(ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: lease(), Tenant: tenant})
	if err := step("claim", j, err); err != nil {
		return projected, err
	}
	j, err = s.jobs.Renew(ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: j.Generation, Version: j.Version,
		LeaseUntil: lease(), Progress: 5})
	if err := step("renew", j, err); err != nil {
		return projected, err
	}
	j, err = s.jobs.Accept(ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: j.Generation, Version: j.Version,
		Result:   jobs.Result{Key: fmt.Sprintf("candidates/%s/g%010d/attempt-a.json", id, j.Generation), SHA256: benchSHA256, Size: 7},
		Progress: 9})
	return projected, step("accept", j, err)
}

const benchSHA256 = "abababababababababababababababababababababababababababababababab"

// project applies the events a transition emitted, as the projector
// does, and requires each to be applied.
func (s *benchStores) project(ctx context.Context, prev, cur *jobs.Job) (int, error) {
	msgs, err := outbox.FromTransition(cur, prev)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range msgs {
		if m.Kind != outbox.KindEvent {
			continue
		}
		ev, err := outbox.DecodeEvent(string(m.Body))
		if err != nil {
			return n, err
		}
		res, err := s.proj.Apply(ctx, projection.ViewOfEvent(&ev), ev.Delta)
		if err != nil {
			return n, fmt.Errorf("apply %s: %w", ev.EventID, err)
		}
		if res.Outcome != projection.Applied {
			return n, errors.New("apply " + ev.EventID + ": " + res.Outcome.String())
		}
		n++
	}
	return n, nil
}
