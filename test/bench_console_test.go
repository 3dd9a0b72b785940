//go:build integration

package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// BenchmarkConsolePages measures the console's pages (issue 20: each in
// under 100 ms on the local stack with 2,000 jobs) through HTTP, as the
// browser asks for them: the overview, the first page of the jobs list,
// the jobs list of one tenant and status, one job (completed, with its
// result's link, its candidate and its timeline), a queue's held groups,
// and one held group with its parked messages; beside the time, the
// requests a page costs the console's DynamoDB and S3 clients, by
// operation (Query/op, BatchGetItem/op...; the quarantine's requests are
// not counted). `make bench-console` runs it on a stack of its own; make
// test runs none of it.
//
// The 2,000 jobs are written through jobs.DynamoStore, as the functions
// write them, without the pipeline (which would take minutes to run them
// and measure nothing more of the console): each is created, three in four
// claimed, one in two accepted, over four tenants, so the live and the
// finished indexes both hold hundreds. The one job the job page shows has
// its candidate in the bucket. A held group has three parked messages,
// parked as the worker parks them.
//
// The pages are measured in consoleRounds rounds, each every page in turn,
// so that the shared machine's load weighs on each alike; benchstat -ignore
// /round gives each page's median over the rounds.
func BenchmarkConsolePages(b *testing.B) {
	d := benchDeploy(b, nil)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: d.state.DynamoDBClient(), Table: d.deployed.Resources["JobsTable"]})
	require.NoError(b, err)
	started := time.Now()
	shown := seedConsoleJobs(b, store, consoleJobs)
	cands, err := candidate.New(candidate.Config{Client: d.state.S3Client(), Bucket: d.deployed.Resources["CandidatesBucket"]})
	require.NoError(b, err)
	completeWithCandidate(b, store, cands, shown)
	group := holdConsoleGroup(b, d, 3)
	b.Logf("seeded %d jobs and a held group in %s", consoleJobs, time.Since(started).Round(time.Millisecond))

	op := queueOperator(b, d.state, d.deployed, "CommandsQueue", d.state.SQSClient())
	counted := &awstest.Requests{}
	srv := startConsole(b, d.state, d.deployed, op, true, counted)
	pages := []struct{ name, path, want string }{
		{"overview", "/", `data-testid="held-commands"><a href="/quarantine/commands">1</a>`},
		{"jobs", "/jobs", `data-testid="job-row"`},
		{"jobs-filtered", "/jobs?tenant=t-1&status=running", `<td>t-1</td><td class="status running">`},
		{"job", "/jobs/" + shown, shown},
		{"quarantine", "/quarantine/commands", group},
		{"group", "/quarantine/commands/" + group, group},
	}
	client := &http.Client{Timeout: time.Minute}
	for round := 1; round <= consoleRounds; round++ {
		for _, p := range pages {
			b.Run(fmt.Sprintf("page=%s/round=%d", p.name, round), func(b *testing.B) {
				counted.Take()
				for b.Loop() {
					body := getConsolePage(b, client, srv, p.path)
					if !strings.Contains(body, p.want) {
						b.Fatalf("%s does not show %q:\n%s", p.path, p.want, body)
					}
				}
				for op, n := range counted.Take() {
					b.ReportMetric(float64(n)/float64(b.N), op+"/op")
				}
			})
		}
	}
}

const (
	consoleJobs   = 2000
	consoleRounds = 6
)

// getConsolePage GETs path with the console's token as a bearer token and
// returns the page; anything but 200 fails b.
func getConsolePage(b *testing.B, client *http.Client, srv *consoleServer, path string) string {
	req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, srv.url+path, nil)
	require.NoError(b, err)
	req.Header.Set("Authorization", "Bearer "+srv.token)
	resp, err := client.Do(req)
	require.NoError(b, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
	return string(body)
}

// seedConsoleJobs writes n jobs over four tenants, 16 at a time: each
// created, three in four claimed, one in two accepted (a result whose
// object is not in the bucket: only the job page's job has one). It
// returns a job it leaves claimed, for completeWithCandidate.
func seedConsoleJobs(b *testing.B, store *jobs.DynamoStore, n int) string {
	b.Helper()
	ids := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range ids {
				if err := seedConsoleJob(b.Context(), store, i); err != nil {
					errs <- fmt.Errorf("job %d: %w", i, err)
				}
			}
		})
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	require.NoError(b, errors.Join(all...))
	return jobs.DeriveJobID("t-1", consoleIntent(1))
}

func consoleIntent(i int) string { return fmt.Sprintf("console-%04d", i) }

func seedConsoleJob(ctx context.Context, store *jobs.DynamoStore, i int) error {
	created, err := store.Create(ctx, jobs.CreateRequest{IntentID: consoleIntent(i), Tenant: fmt.Sprintf("t-%d", i%4), Spec: map[string]string{"page_size": "100"}})
	if err != nil || i%4 == 0 {
		return err
	}
	claimed, err := store.Claim(ctx, jobs.ClaimRequest{JobID: created.Job.ID, AttemptID: "a1", LeaseUntil: time.Now().Add(10 * time.Minute)})
	if err != nil || i%2 == 1 {
		return err
	}
	key, err := candidate.NewKey(claimed.ID, claimed.Generation, "a1", "ndjson")
	if err != nil {
		return err
	}
	_, err = store.Accept(ctx, jobs.AcceptRequest{
		JobID: claimed.ID, AttemptID: "a1", Generation: claimed.Generation, Version: claimed.Version,
		Result: jobs.Result{Key: key.String(), SHA256: strings.Repeat("0", 64), Size: 2}, Progress: 1,
	})
	return err
}

// completeWithCandidate writes job id's candidate (generation 1, attempt
// a1, which seedConsoleJobs claimed) and accepts it: the job page then
// shows its result, its link and its candidate.
func completeWithCandidate(b *testing.B, store *jobs.DynamoStore, cands *candidate.Store, id string) {
	b.Helper()
	j, err := store.Get(b.Context(), id)
	require.NoError(b, err)
	require.Equal(b, jobs.StatusRunning, j.Status)
	key, err := candidate.NewKey(id, j.Generation, "a1", "ndjson")
	require.NoError(b, err)
	res, err := cands.Put(b.Context(), key, strings.NewReader("{\"n\":1}\n"))
	require.NoError(b, err)
	_, err = store.Accept(b.Context(), jobs.AcceptRequest{
		JobID: id, AttemptID: "a1", Generation: j.Generation, Version: j.Version,
		Result: jobs.Result{Key: key.String(), SHA256: res.SHA256, Size: res.Size}, Progress: 1,
	})
	require.NoError(b, err)
}

// holdConsoleGroup parks n messages of a group of the commands queue as
// the worker parks a failed lane's, holding the group, and returns it.
func holdConsoleGroup(b *testing.B, d *benchDeployment, n int) string {
	b.Helper()
	holds, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: d.state.DynamoDBClient(), Table: d.deployed.Resources["QuarantineTable"]})
	require.NoError(b, err)
	q, err := quarantine.New(quarantine.Config{Store: holds, QueueARN: d.deployed.Attributes["CommandsQueue"]["Arn"]})
	require.NoError(b, err)
	group := "console-held"
	var msgs []*events.SQSMessage
	for i := range n {
		msgs = append(msgs, &events.SQSMessage{
			MessageId: fmt.Sprintf("m-%d", i), Body: fmt.Sprintf(`{"job_id":"job-%d"}`, i),
			Attributes: map[string]string{
				"SequenceNumber": fmt.Sprintf("1888800000000000000%d", i+1), "MessageGroupId": group,
				"MessageDeduplicationId": fmt.Sprintf("d-%d", i), "ApproximateReceiveCount": "1",
			},
		})
	}
	_, err = q.Park(b.Context(), group, msgs, errors.New("handler: permanent: bad command"), true)
	require.NoError(b, err)
	return group
}
