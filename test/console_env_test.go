//go:build integration

package test

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// consoleServer is the operator's console (internal/app/console) over a
// deployment on the local stack, served by httptest on 127.0.0.1 and
// closed when the test ends: the jobs, candidates and results of the
// deployment's table and bucket, the sweeper's last run, and the commands
// queue's quarantine through the operator it is given, as `fifoworker console` reads them.
type consoleServer struct {
	url   string // the console's root, without the token
	token string
}

// startConsole starts the console; with allowActions, its redrive and
// discard are on. When counted is not nil, it counts the requests of the
// console's DynamoDB and S3 clients (the quarantine's are commands').
func startConsole(tb testing.TB, state *localstack.State, deployed *localdeploy.Result, commands *quarantine.Operator, allowActions bool, counted *awstest.Requests) *consoleServer {
	tb.Helper()
	ddb, s3c := state.DynamoDBClient(), state.S3Client()
	if counted != nil {
		ddb = dynamodb.New(ddb.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, counted.Count("")) })
		s3c = s3.New(s3c.Options(), func(o *s3.Options) { o.APIOptions = append(o.APIOptions, counted.Count("")) })
	}
	table := deployed.Resources["JobsTable"]
	// As many shards as the functions wrote the jobs with, as the CLI
	// reads them: the listings walk them all.
	shards, err := jobs.RecordedLiveShards(tb.Context(), ddb, table)
	require.NoError(tb, err)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: ddb, Table: table, LiveShards: min(shards, jobs.MaxLiveShards)})
	require.NoError(tb, err)
	bucket := deployed.Resources["CandidatesBucket"]
	cands, err := candidate.New(candidate.Config{Client: s3c, Bucket: bucket})
	require.NoError(tb, err)
	results, err := intake.NewS3Presigner(intake.S3PresignerConfig{Client: s3c, Presign: s3.NewPresignClient(s3c), Bucket: bucket, EmulatorWithoutChecksums: true})
	require.NoError(tb, err)
	sweeps, err := sweeper.NewS3LastRun(sweeper.S3LastRunConfig{Client: s3c, Bucket: bucket})
	require.NoError(tb, err)
	secret := make([]byte, 16)
	_, err = rand.Read(secret)
	require.NoError(tb, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	s := &consoleServer{token: hex.EncodeToString(secret)}
	c, err := console.New(console.Config{
		Jobs: store, Candidates: cands, Results: results, Sweeps: sweeps,
		Queues:       []console.Queue{{Name: "commands", Quarantine: commands}},
		Token:        s.token,
		Addr:         ln.Addr().String(),
		AllowActions: allowActions,
	})
	require.NoError(tb, err)
	srv := httptest.NewUnstartedServer(c)
	srv.Listener = ln
	srv.Start()
	tb.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}
