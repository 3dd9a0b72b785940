//go:build integration

package pipeline_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// The SQS + PostgreSQL pipeline end to end (template-postgres.yaml, the
// five functions in process with their PostgreSQL builders): the local
// deployment makes the queues, the bucket and the articles table, skips
// the database's and the network's resources saying the local PostgreSQL
// stands in, and applies the schema to the test's own database; jobs of
// two tenants submitted through intake are claimed, run and accepted, the
// relay publishing the outbox for the writers' nudges alone (its backstop
// schedule is the template's minute, longer than the test waits), and
// each job's view reaches completed with its articles counted; the
// outbox is left empty.
func TestPipelineOnPostgres(t *testing.T) {
	state := testenv.Stack(t)
	tpl, err := samtemplate.Load("../../../template-postgres.yaml")
	require.NoError(t, err)
	demo.Prepare(tpl)
	require.Equal(t, pipeline.StorePostgres, pipeline.TemplateStore(tpl))

	pgcfg := pgtest.Config(t)
	db := sql.OpenDB(pgtest.Connector(t, pgcfg))
	db.SetMaxOpenConns(4)
	t.Cleanup(func() { _ = db.Close() })
	port := pgcfg.Port
	if port == 0 {
		port = pgwire.DefaultPort
	}
	dsn := fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", pgcfg.User, net.JoinHostPort(pgcfg.Host, strconv.Itoa(port)), pgcfg.Database)

	stack := awstest.Name(t, "pg-e2e")
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client(), Postgres: db}
	deployed, err := localdeploy.Deploy(t.Context(), tpl, stack, state.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	skipped := strings.Join(deployed.Skipped, "\n")
	require.Contains(t, skipped, "DatabaseProxy (AWS::RDS::DBProxy): not created: the local stack's PostgreSQL (FIFOWORKER_POSTGRES_DSN) stands in")
	require.Contains(t, skipped, "FunctionsSecurityGroup (AWS::EC2::SecurityGroup): not created: the functions run on this machine, in no VPC")
	require.Contains(t, skipped, "DatabaseSchema (Custom::FifoworkerSchema): applied to the local stack's PostgreSQL by pgschema.Apply")
	for _, made := range []string{"CommandsQueue", "EventsQueue", "CandidatesBucket", "ArticlesTable"} {
		require.NotEmpty(t, deployed.Resources[made], made)
	}
	for _, notMade := range []string{"JobsTable", "ViewsTable", "TotalsTable", "QuarantineTable"} {
		require.Empty(t, deployed.Resources[notMade], "%s is PostgreSQL's", notMade)
	}

	articles := map[string]int{"t-1": 5, "t-2": 3}
	require.NoError(t, demo.SeedArticles(t.Context(), state.DynamoDBClient(), deployed.Resources["ArticlesTable"], articles))
	var endpoints []string
	for _, kv := range state.Env() {
		if !strings.HasPrefix(kv, pgopen.DSNVar+"=") {
			endpoints = append(endpoints, kv)
		}
	}
	endpoints = append(endpoints, pgopen.DSNVar+"="+dsn) // the test's own database on the stack's server

	p, err := pipeline.Build(t.Context(), pipeline.Config{Template: tpl, Deployed: deployed, StackName: stack, Region: state.Region, Endpoints: endpoints})
	require.NoError(t, err)
	p.Run(t.Context())
	stopped := false
	defer func() {
		if !stopped {
			_ = p.Stop()
		}
	}()

	want := map[string]int64{}
	for i := range 6 {
		tenant := []string{"t-1", "t-2"}[i%2]
		intent := fmt.Sprintf("pg-intent-%d", i)
		resp, err := p.HTTP(t.Context(), demo.APIRequest(http.MethodPost, "/jobs", tenant, intent, `{"spec":{"page_size":"2"}}`))
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, resp.StatusCode, resp.Body)
		want[jobs.DeriveJobID(tenant, intent)] = int64(articles[tenant])
	}

	views, err := projection.NewPostgresStore(projection.PostgresConfig{DB: db})
	require.NoError(t, err)
	deadline := time.Now().Add(90 * time.Second)
	for id, progress := range want {
		for {
			v, err := views.View(t.Context(), id)
			if err == nil && v.Status == jobs.StatusCompleted {
				require.Equal(t, progress, v.Progress, id)
				break
			}
			require.True(t, time.Now().Before(deadline), "job %s not projected completed: %+v, %v (relay %+v)", id, v, err, p.RelayStats())
			time.Sleep(100 * time.Millisecond)
		}
	}
	var left int
	require.Eventually(t, func() bool {
		return db.QueryRowContext(t.Context(), `SELECT count(*) FROM job_outbox`).Scan(&left) == nil && left == 0
	}, 30*time.Second, 100*time.Millisecond, "the outbox is drained")
	stats := p.RelayStats()
	require.Positive(t, stats.Nudges, "the writers nudged the relay")
	require.Positive(t, stats.Runs)
	require.Zero(t, stats.Failed)
	stopped = true
	require.NoError(t, p.Stop())
}
