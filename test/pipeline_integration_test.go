//go:build integration

package test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// runPipeline deploys template.yaml (with the demo's short timeouts) under a
// stack name of its own and runs the demo's scenario on it. Every write to
// the Views table is watched while it runs (watchViews): the run fails the
// moment any job's view goes back, not only if it ends behind.
func runPipeline(t *testing.T, jobs int, rie bool) demo.Summary {
	t.Helper()
	state := testenv.Stack(t)
	tpl, err := samtemplate.Load("../template.yaml")
	require.NoError(t, err)
	demo.Prepare(tpl)
	withViewsStream(t, tpl)
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client()}
	stack := awstest.Name(t, "e2e")
	deployed, err := localdeploy.Deploy(context.Background(), tpl, stack, state.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	if rie {
		require.NotEmpty(t, state.RIE, "FIFOWORKER_RIE names the runtime interface emulator (make test's local run sets it)")
	}
	watch := watchViews(t, awstest.Streams(t), deployed.Attributes["ViewsTable"]["StreamArn"])
	out := &testenv.Buffer{}
	sum, err := demo.Run(t.Context(), demo.Options{
		State: state, Template: tpl, Deployed: deployed, StackName: stack, Jobs: jobs, RIE: rie,
		Root: "..", LogDir: t.TempDir(), Out: out, Setenv: t.Setenv,
	})
	t.Logf("demo output:\n%s", out.String())
	require.NoError(t, err)
	watch.stop(t)
	views := watch.requireSawEveryView(t, state.DynamoDBClient(), deployed.Resources["ViewsTable"])
	t.Logf("view writes watched: %d for %d views", watch.count(), views)
	require.GreaterOrEqual(t, views, sum.Jobs, "a view for every job")
	return sum
}

// withViewsStream gives the test's copy of the template a stream on the
// Views table (new and old images), which the watch reads. Nothing in the
// pipeline consumes it, and the projector's writes are the same with it.
func withViewsStream(t *testing.T, tpl *samtemplate.Template) {
	t.Helper()
	views, ok := tpl.Resources["ViewsTable"]
	require.True(t, ok, "template.yaml declares no ViewsTable")
	require.NotContains(t, views.Properties, "StreamSpecification", "the template's Views table has a stream of its own now")
	views.Properties["StreamSpecification"] = map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"}
}

// viewImage is what the watch compares of a view: its version and status.
type viewImage struct {
	version int64
	status  string
}

func (v viewImage) String() string { return fmt.Sprintf("v%d %s", v.version, v.status) }

func finalStatus(s string) bool { return s == "completed" || s == "failed" || s == "cancelled" }

// viewWatch follows the Views table's stream while the pipeline runs and
// checks every write to a view against the view it replaced: DynamoDB
// Streams gives each item's modifications exactly once and in the order
// they were applied, each with the item before and after. A write that
// lowers the version, changes the status at the same version, leaves a
// final status, or removes the view is a regression, reported at once
// (t.Errorf) and kept for stop. Each record's old image must also be the
// last image the watch saw of the job, so a record missed or read out of
// order is caught rather than hiding a regression.
type viewWatch struct {
	api *dynamodbstreams.Client
	arn string

	mu         sync.Mutex
	last       map[string]viewImage // job id → newest image seen
	writes     int
	violations []string
	report     func(format string, args ...any)

	shards map[string]*shardReader
	cancel context.CancelFunc
	done   chan struct{}
}

type shardReader struct {
	parent   string
	iterator *string // nil once a closed shard is read to its end
	started  bool
	lastSeq  string // the sequence number of the last record read
}

// watchViews starts the watch; stop drains it. The background reader is
// stopped between passes, never in the middle of a request, so no
// iterator is left behind whose answer was lost.
func watchViews(t *testing.T, api *dynamodbstreams.Client, arn string) *viewWatch {
	t.Helper()
	require.NotEmpty(t, arn, "the Views table has a stream")
	ctx, cancel := context.WithCancel(context.Background())
	w := &viewWatch{api: api, arn: arn, last: map[string]viewImage{}, shards: map[string]*shardReader{},
		report: t.Errorf, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			if _, err := w.pass(context.WithoutCancel(ctx)); err != nil {
				w.report("view watch: %v", err)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// drain stops the background reader and reads what is left: passes over
// every shard until one finds no record. The writers have stopped, and
// DynamoDB Local's stream shows a write at once, so that is everything.
func (w *viewWatch) drain(t *testing.T) {
	t.Helper()
	w.cancel()
	<-w.done
	for {
		n, err := w.pass(t.Context())
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
}

// stop drains the watch and fails the test on any regression it saw,
// during the run or after.
func (w *viewWatch) stop(t *testing.T) {
	t.Helper()
	w.drain(t)
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Empty(t, w.violations, "a view went back during the run")
}

func (w *viewWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// requireSawEveryView holds the watch to the table as the run left it: its
// last image of every view is the view's version and status. A watch that
// missed writes, or read none, fails here instead of passing vacuously.
func (w *viewWatch) requireSawEveryView(t *testing.T, ddb *dynamodb.Client, table string) int {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	views := 0
	pages := dynamodb.NewScanPaginator(ddb, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		require.NoError(t, err)
		for _, item := range page.Items {
			id, _ := item["job_id"].(*ddbtypes.AttributeValueMemberS)
			v, _ := item["version"].(*ddbtypes.AttributeValueMemberN)
			st, _ := item["status"].(*ddbtypes.AttributeValueMemberS)
			require.True(t, id != nil && v != nil && st != nil, "view item %v", item)
			version, err := strconv.ParseInt(v.Value, 10, 64)
			require.NoError(t, err)
			require.Equal(t, viewImage{version, st.Value}, w.last[id.Value], "the watch's last image of %s", id.Value)
			views++
		}
	}
	require.Len(t, w.last, views, "the watch saw a view the table does not have")
	require.GreaterOrEqual(t, w.writes, views)
	return views
}

// pass reads every shard it may read (a child only once its parent is read
// to its end) until each has no more records now; it returns how many
// records it read.
func (w *viewWatch) pass(ctx context.Context) (int, error) {
	if err := w.discover(ctx); err != nil {
		return 0, err
	}
	read := 0
	for id, s := range w.shards {
		if p, ok := w.shards[s.parent]; ok && (!p.started || p.iterator != nil) {
			continue // its parent's records come first
		}
		if !s.started {
			if err := w.iterate(ctx, id, s); err != nil {
				return read, err
			}
		}
		renewed := false
		for s.iterator != nil {
			out, err := w.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: s.iterator})
			var expired *streamtypes.ExpiredIteratorException
			var trimmed *streamtypes.TrimmedDataAccessException
			if !renewed && (errors.As(err, &expired) || errors.As(err, &trimmed)) {
				// An iterator lasts 15 minutes; and DynamoDB Local answers
				// TrimmedDataAccessException to an iterator taken at the
				// horizon of a shard that was empty then, once a record
				// arrives (aws/aws-sdk-java#2923), though nothing was
				// trimmed. Either way a new iterator after the last record
				// read (at the horizon if none was) loses and repeats
				// nothing; a second failure in a row is an error.
				if err := w.iterate(ctx, id, s); err != nil {
					return read, err
				}
				renewed = true
				continue
			}
			if err != nil {
				return read, fmt.Errorf("shard %s: %w", id, err)
			}
			renewed = false
			for i := range out.Records {
				w.check(&out.Records[i])
				s.lastSeq = aws.ToString(out.Records[i].Dynamodb.SequenceNumber)
			}
			read += len(out.Records)
			s.iterator = out.NextShardIterator
			if len(out.Records) == 0 {
				break // open and read up to now
			}
		}
	}
	return read, nil
}

// iterate gives s an iterator at its first record, or after the last one
// read.
func (w *viewWatch) iterate(ctx context.Context, id string, s *shardReader) error {
	in := &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(w.arn), ShardId: aws.String(id), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
	}
	if s.lastSeq != "" {
		in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, aws.String(s.lastSeq)
	}
	out, err := w.api.GetShardIterator(ctx, in)
	if err != nil {
		return fmt.Errorf("shard %s: %w", id, err)
	}
	s.iterator, s.started = out.ShardIterator, true
	return nil
}

func (w *viewWatch) discover(ctx context.Context) error {
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(w.arn)}
	for {
		out, err := w.api.DescribeStream(ctx, in)
		if err != nil {
			return err
		}
		for _, sh := range out.StreamDescription.Shards {
			if _, ok := w.shards[aws.ToString(sh.ShardId)]; !ok {
				w.shards[aws.ToString(sh.ShardId)] = &shardReader{parent: aws.ToString(sh.ParentShardId)}
			}
		}
		if out.StreamDescription.LastEvaluatedShardId == nil {
			return nil
		}
		in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
	}
}

// check holds one stream record to the rule that a view never goes back.
func (w *viewWatch) check(rec *streamtypes.Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	d := rec.Dynamodb
	id := streamString(d.Keys["job_id"])
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf("view %s: ", id) + fmt.Sprintf(format, args...)
		w.violations = append(w.violations, msg)
		w.report("%s", msg)
	}
	if rec.EventName == streamtypes.OperationTypeRemove {
		fail("removed (it was %v)", w.last[id])
		delete(w.last, id)
		return
	}
	next, err := streamImage(d.NewImage)
	if err != nil {
		fail("%v", err)
		return
	}
	seen, wasSeen := w.last[id]
	w.last[id] = next
	if rec.EventName != streamtypes.OperationTypeModify {
		if wasSeen { // an insert after a removal, which was reported
			regressed(seen, next, func(why string) { fail("%v → %v: %s", seen, next, why) })
		}
		return
	}
	old, err := streamImage(d.OldImage)
	if err != nil {
		fail("%v", err)
		return
	}
	if wasSeen && seen != old {
		fail("the write replaced %v, but the watch last saw %v: a record missed or out of order", old, seen)
	}
	regressed(old, next, func(why string) { fail("%v → %v: %s", old, next, why) })
}

// regressed calls fail if a view that held old now holds next and that is
// going back: an older version, another status at the same version, or
// another status after a final one.
func regressed(old, next viewImage, fail func(why string)) {
	switch {
	case next.version < old.version:
		fail("the version went back")
	case next.version == old.version && next.status != old.status:
		fail("the status changed at the same version")
	case finalStatus(old.status) && next.status != old.status:
		fail("a final status was left")
	}
}

func streamImage(img map[string]streamtypes.AttributeValue) (viewImage, error) {
	n, ok := img["version"].(*streamtypes.AttributeValueMemberN)
	if !ok {
		return viewImage{}, errors.New("an image without a version")
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return viewImage{}, err
	}
	return viewImage{version: v, status: streamString(img["status"])}, nil
}

func streamString(av streamtypes.AttributeValue) string {
	if s, ok := av.(*streamtypes.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// The watch catches what a check of the end state cannot: a view that
// went back and forward again. Written straight to a Views table, v1, v2,
// then v1 again (a writer that ignored the version), then v3 completed:
// the view ends where it should, and the watch reports the one write that
// went back, and nothing for the others.
func TestViewWatchCatchesARegressionTheEndStateHides(t *testing.T) {
	t.Parallel()
	ddb := awstest.DynamoDB(t)
	tpl, err := samtemplate.Load("../template.yaml")
	require.NoError(t, err)
	only, err := testenv.Only(tpl, "ViewsTable")
	require.NoError(t, err)
	withViewsStream(t, only)
	cfg := awstest.Config(t)
	clients := localdeploy.Clients{DynamoDB: ddb}
	deployed, err := localdeploy.Deploy(t.Context(), only, awstest.Name(t, "views"), cfg.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	table := deployed.Resources["ViewsTable"]

	watch := watchViews(t, awstest.Streams(t), deployed.Attributes["ViewsTable"]["StreamArn"])
	var reported []string
	watch.mu.Lock()
	watch.report = func(format string, args ...any) { reported = append(reported, fmt.Sprintf(format, args...)) }
	watch.mu.Unlock()
	put := func(id string, version int64, status string) {
		t.Helper()
		_, err := ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]ddbtypes.AttributeValue{
			"job_id": &ddbtypes.AttributeValueMemberS{Value: id}, "tenant": &ddbtypes.AttributeValueMemberS{Value: "t-1"},
			"status": &ddbtypes.AttributeValueMemberS{Value: status}, "version": &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)},
			"generation": &ddbtypes.AttributeValueMemberN{Value: "1"}, "progress": &ddbtypes.AttributeValueMemberN{Value: "0"},
		}})
		require.NoError(t, err)
	}
	put("job-42", 1, "running")
	put("job-42", 2, "running")
	put("job-43", 1, "running")
	put("job-42", 1, "running") // back
	put("job-42", 3, "completed")
	put("job-43", 2, "completed")

	watch.drain(t)
	require.Equal(t, 6, watch.count())
	require.Equal(t, []string{"view job-42: v2 running → v1 running: the version went back"}, watch.violations)
	require.Equal(t, watch.violations, reported, "reported the moment it was read")
	require.Equal(t, 2, watch.requireSawEveryView(t, ddb, table), "the end state is as it should be")
}

// The whole pipeline, in process: the running example through all five
// functions, a cancelled job, bad requests and 200 jobs over six tenants,
// with every invariant checked against the tables, the bucket and the
// queues. Not parallel: it sets the endpoint variables of this process.
func TestPipelineEndToEnd(t *testing.T) {
	sum := runPipeline(t, 200, false)
	require.True(t, sum.OK, "%+v", sum)
	require.Equal(t, 204, sum.Jobs, "the running example, the cancelled job, the word count, the poison job and 200")
	require.Equal(t, 1, sum.GroupsHeld)
	require.Equal(t, 3, sum.Redriven)
	require.True(t, sum.OrderKept)
	require.Equal(t, 1, sum.Cancelled)
	require.Equal(t, sum.Jobs-1, sum.Completed+sum.Failed)
	require.Zero(t, sum.FailedUnexpectedly, "a job may fail only by running out of generations (a loaded machine)")
	require.Equal(t, 1, sum.DuplicateIntents)
	require.Equal(t, 4, sum.BadRequestsRefused)
	require.Equal(t, 1, sum.WordCounted, "the second task ran end to end")
	require.Equal(t, 1, sum.StaleAcceptsRejected, "worker A's late accept is refused")
	require.GreaterOrEqual(t, sum.OrphansSwept, 1, "A's candidate is swept")
	require.Zero(t, sum.ViewMismatches)
	require.Zero(t, sum.TotalMismatches)
	require.Zero(t, sum.ResultMismatches)
	require.Zero(t, sum.Lost)
	require.Positive(t, sum.EventsPublished)
}

// The same scenario with each function's built bootstrap under its own
// runtime interface emulator, as `make demo RIE=1` runs it.
func TestPipelineUnderTheRIE(t *testing.T) {
	sum := runPipeline(t, 8, true)
	require.True(t, sum.OK, "%+v", sum)
	require.Equal(t, "rie", sum.Mode)
	require.Equal(t, 1, sum.StaleAcceptsRejected)
	require.Zero(t, sum.Lost)
}
