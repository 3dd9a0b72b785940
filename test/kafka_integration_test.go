//go:build integration

package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/localesm"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// localDeployment is a template deployed on the test stack under a stack
// name of its own (deployKafka, deploySQS).
type localDeployment struct {
	state    *localstack.State
	tpl      *samtemplate.Template
	deployed *localdeploy.Result
	stack    string
}

// deployKafka deploys template-kafka.yaml with the demo's short timeouts
// under a stack name of its own, its topics named after the stack (the
// run's tests share one broker), after prepare adjusts the template, and
// tears it down, topics included, after the test.
func deployKafka(t *testing.T, prefix string, prepare func(*samtemplate.Template)) localDeployment {
	t.Helper()
	return deployKafkaTemplate(t, "../template-kafka.yaml", prefix, prepare)
}

// deployKafkaTemplate is deployKafka of the Kafka template at path
// (template-kafka-postgres.yaml: its PostgreSQL schema is not applied,
// as no database is given the deployment).
func deployKafkaTemplate(t *testing.T, path, prefix string, prepare func(*samtemplate.Template)) localDeployment {
	t.Helper()
	state := testenv.Stack(t)
	state.Kafka = os.Getenv(localstack.KafkaBootstrapVar)
	require.NotEmpty(t, state.Kafka, "the stack's broker (%s, which `fifoworker local run` sets)", localstack.KafkaBootstrapVar)
	tpl, err := samtemplate.Load(path)
	require.NoError(t, err)
	demo.Prepare(tpl)
	stack := awstest.Name(t, prefix)
	for param, topic := range map[string]string{"CommandsTopicName": stack + "-commands", "EventsTopicName": stack + "-events"} {
		p := tpl.Parameters[param]
		p.Default = topic
		tpl.Parameters[param] = p
	}
	if prepare != nil {
		prepare(tpl)
	}
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client(), KafkaBootstrapServers: state.Kafka}
	deployed, err := localdeploy.Deploy(context.Background(), tpl, stack, state.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, testenv.Teardown(context.Background(), deployed, clients))
		cl, err := kgo.NewClient(kgo.SeedBrokers(state.Kafka))
		require.NoError(t, err)
		defer cl.Close()
		_, err = kadm.NewClient(cl).DeleteTopics(context.Background(), deployed.Topics...)
		require.NoError(t, err)
	})
	return localDeployment{state: state, tpl: tpl, deployed: deployed, stack: stack}
}

// requireNothingLeftOnKafka checks that every consumer group of p has
// committed past every record of its topic and that no record was given
// up to an on-failure bucket.
func requireNothingLeftOnKafka(t *testing.T, p *pipeline.Pipeline, s3c *s3.Client) {
	t.Helper()
	lags, err := p.KafkaLag(t.Context())
	require.NoError(t, err)
	require.Len(t, lags, 2, "the worker's and the projector's groups")
	for group, lag := range lags {
		require.Zero(t, lag, group)
	}
	for _, m := range p.KafkaMappings() {
		keys, err := demo.FailedRecords(t.Context(), s3c, m.FailureBucket)
		require.NoError(t, err)
		require.Empty(t, keys, m.Name)
	}
}

// The pipeline on Kafka, end to end: the demo's scenario on
// template-kafka.yaml, in process, with a few jobs: jobs through the API,
// the running example's takeover (worker A's invocation reaches its
// deadline, the commands mapping's retries take over once A's lease has
// ended), each result selected and read back, the projection converged
// (every write to a view watched: none goes back), the totals right, the
// poison job's key held by the commands topic's quarantine, its three
// records parked and redriven in order, and at the end every consumer
// group's lag 0 and nothing given up. Not parallel: it sets the endpoint
// variables of this process.
func TestPipelineOnKafka(t *testing.T) {
	k := deployKafka(t, "kafka-e2e", func(tpl *samtemplate.Template) { withViewsStream(t, tpl) })
	watch := watchViews(t, awstest.Streams(t), k.deployed.Attributes["ViewsTable"]["StreamArn"])
	out := &testenv.Buffer{}
	var p *pipeline.Pipeline
	sum, err := demo.Run(t.Context(), demo.Options{
		State: k.state, Template: k.tpl, Deployed: k.deployed, StackName: k.stack, Jobs: 12,
		Root: "..", LogDir: t.TempDir(), Out: out, Setenv: t.Setenv,
		Started: func(started *pipeline.Pipeline) { p = started },
	})
	t.Logf("demo output:\n%s", out.String())
	require.NoError(t, err)
	watch.stop(t)
	views := watch.requireSawEveryView(t, k.state.DynamoDBClient(), k.deployed.Resources["ViewsTable"])
	require.GreaterOrEqual(t, views, sum.Jobs, "a view for every job")

	require.True(t, sum.OK, "%+v", sum)
	require.Equal(t, "kafka", sum.Transport)
	require.Empty(t, sum.Skipped)
	require.Equal(t, 16, sum.Jobs, "the running example, the cancelled job, the word count, the poison job and 12")
	require.Equal(t, 1, sum.GroupsHeld, "the poison job's key held on the commands topic")
	require.Equal(t, 3, sum.Redriven)
	require.True(t, sum.OrderKept)
	require.Equal(t, 1, sum.StaleAcceptsRejected, "worker A's late accept is refused")
	require.GreaterOrEqual(t, sum.OrphansSwept, 1, "A's candidate is swept")
	require.Equal(t, 1, sum.WordCounted)
	require.Zero(t, sum.Lost)
	require.Zero(t, sum.ResultMismatches+sum.ViewMismatches+sum.TotalMismatches)
	require.Positive(t, sum.EventsPublished)
	requireNothingLeftOnKafka(t, p, k.state.S3Client())
}

// kafkaBatches records the settled batches of the Kafka mappings.
type kafkaBatches struct {
	mu  sync.Mutex
	all []kafkaBatch
}

type kafkaBatch struct {
	fn string
	r  localesm.KafkaBatchResult
}

func (b *kafkaBatches) record(fn string, r localesm.KafkaBatchResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all = append(b.all, kafkaBatch{fn, r})
}

// invoked says whether function fn was invoked with every offset of tp.
func (b *kafkaBatches) invoked(fn, tp string, offsets ...int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, batch := range b.all {
		if batch.fn == fn && batch.r.Attempt > 0 && !slices.ContainsFunc(offsets, func(o int64) bool { return !slices.Contains(batch.r.Offsets[tp], o) }) {
			return true
		}
	}
	return false
}

// Hostile records on the topics, end to end (docs/TESTING.md, "What
// happens to each bad input, end to end", its Kafka rows): produced
// straight to the commands and events topics of a running pipeline,
// beside a job completed before (J1) and ahead of a job submitted after
// (J2):
//   - a record with a null key, on each topic in J2's partition: refused
//     for good by the worker and the projector (kafka.Permanent); with no
//     key the quarantine cannot hold it, so the mapping retries it (8
//     invocations of the worker, 10 of the projector: 1 +
//     MaximumRetryAttempts) and gives it up to the on-failure bucket,
//     which holds exactly these two; J2's records, behind them in their
//     partitions, wait and then flow: J2 completes and is projected;
//   - a value that is not JSON, under a key of no job: refused for good,
//     and parked by the topic's quarantine under its key (held); the
//     mapping commits past it, nothing else waits;
//   - a header bomb (2,000 headers, 200 KB, under the topic's 262,144
//     bytes) carrying a copy of J1's command, and of J1's first event: run
//     as any copy (the headers are not read): J1 is unchanged;
//   - a record over the topic's max.message.bytes (300 KB) and one over
//     1 MB: refused (MESSAGE_TOO_LARGE) by the broker and by the producer
//     before it sends; neither reaches the topic, which the mappings never
//     see.
//
// At the end both groups' lag is 0. Not parallel: it sets the endpoint
// variables of this process.
func TestHostileRecordsOnKafka(t *testing.T) {
	k := deployKafka(t, "kafka-hostile", nil)
	for _, kv := range k.state.Env() {
		key, v, _ := strings.Cut(kv, "=")
		t.Setenv(key, v)
	}
	require.NoError(t, demo.SeedArticles(t.Context(), k.state.DynamoDBClient(), k.deployed.Resources["ArticlesTable"], map[string]int{"t-1": 5}))
	log, batches := &testenv.Buffer{}, &kafkaBatches{}
	p, err := pipeline.Build(t.Context(), pipeline.Config{
		Template: k.tpl, Deployed: k.deployed, StackName: k.stack, Region: k.state.Region, Endpoints: k.state.Env(),
		Logger:       slog.New(slog.NewJSONHandler(log, nil)),
		OnKafkaBatch: batches.record,
	})
	require.NoError(t, err)
	p.Run(t.Context())
	t.Cleanup(func() {
		require.NoError(t, p.Stop())
		if t.Failed() {
			t.Logf("the functions' log:\n%s", log.String())
		}
	})
	commands, evts := k.deployed.Outputs["CommandsTopic"], k.deployed.Outputs["EventsTopic"]
	mappings := map[string]pipeline.KafkaMapping{}
	for _, m := range p.KafkaMappings() {
		mappings[m.Function] = m
	}

	j1 := submitJob(t, p, "t-1", "kafka-hostile-1")
	before := waitProjected(t, k, j1)

	// J2's partitions differ from J1's, and the key of the record that is
	// not JSON is in neither: each hostile record is alone in its
	// partition's batches.
	partition := func(topic, key string) int32 {
		return int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(&kgo.Record{Key: []byte(key)}, 6))
	}
	apart := func(keys ...string) bool {
		for _, topic := range []string{commands, evts} {
			seen := map[int32]bool{}
			for _, key := range keys {
				if seen[partition(topic, key)] {
					return false
				}
				seen[partition(topic, key)] = true
			}
		}
		return true
	}
	var intent, j2, notJSON string
	for i := 2; ; i++ {
		intent, notJSON = fmt.Sprintf("kafka-hostile-%d", i), fmt.Sprintf("job-not-json-%d", i)
		if j2 = jobs.DeriveJobID("t-1", intent); apart(j1, j2, notJSON) {
			break
		}
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(k.state.Kafka), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	require.NoError(t, err)
	t.Cleanup(producer.Close)
	produce := func(r *kgo.Record) int64 {
		t.Helper()
		res := producer.ProduceSync(t.Context(), r)
		require.NoError(t, res.FirstErr())
		return res[0].Record.Offset
	}

	// J1's first command and first event, as the relay produced them: the
	// bodies the null-key records and the header bombs carry.
	bomb := make([]kgo.RecordHeader, 2000)
	for i := range bomb {
		bomb[i] = kgo.RecordHeader{Key: fmt.Sprintf("h-%04d", i), Value: bytes.Repeat([]byte{byte(i)}, 100)}
	}
	nullKey := map[string]int64{}
	for fn, topic := range map[string]string{"worker": commands, "projector": evts} {
		recs, err := demo.Committed(t.Context(), mappings[fn])
		require.NoError(t, err)
		i := slices.IndexFunc(recs, func(r *kgo.Record) bool { return string(r.Key) == j1 })
		require.GreaterOrEqual(t, i, 0, "J1's first record on %s", topic)
		nullKey[fn] = produce(&kgo.Record{Topic: topic, Partition: partition(topic, j2), Key: nil, Value: recs[i].Value})
		produce(&kgo.Record{Topic: topic, Partition: partition(topic, notJSON), Key: []byte(notJSON), Value: []byte("{not json")})
		produce(&kgo.Record{Topic: topic, Partition: recs[i].Partition, Key: recs[i].Key, Value: recs[i].Value, Headers: bomb})
	}

	// Over max.message.bytes (262,144), and over the producer's 1 MB: never
	// in the topic. Random bytes, which compression cannot shrink: the
	// broker's limit is on the batch as written, compressed.
	ends := endOffsets(t, k.state.Kafka, commands)
	for _, size := range []int{300 << 10, 1100 << 10} {
		value := make([]byte, size)
		_, _ = rand.Read(value)
		res := producer.ProduceSync(t.Context(), &kgo.Record{Topic: commands, Partition: partition(commands, j1), Key: []byte(j1), Value: value})
		require.ErrorIs(t, res.FirstErr(), kerr.MessageTooLarge, "a record of %d bytes", size)
	}
	require.Equal(t, ends, endOffsets(t, k.state.Kafka, commands), "the refused records were not written")

	// J2 only once each mapping invoked its null-key record: J2's records
	// come in later batches, behind it.
	require.Eventually(t, func() bool {
		return batches.invoked("worker", fmt.Sprintf("%s-%d", commands, partition(commands, j2)), nullKey["worker"]) &&
			batches.invoked("projector", fmt.Sprintf("%s-%d", evts, partition(evts, j2)), nullKey["projector"])
	}, time.Minute, 100*time.Millisecond, "the mappings invoked with the null-key records")
	require.Equal(t, j2, submitJob(t, p, "t-1", intent))
	after := waitProjected(t, k, j2)
	require.Equal(t, jobs.StatusCompleted, after.Status, "J2 flowed behind the null-key records")
	require.Eventually(t, func() bool {
		lags, err := p.KafkaLag(t.Context())
		return err == nil && lags[mappings["worker"].ConsumerGroupID] == 0 && lags[mappings["projector"].ConsumerGroupID] == 0
	}, 2*time.Minute, 200*time.Millisecond, "every group committed past every record")

	// J1 is as it was: the bombs ran as copies.
	views, err := projection.NewDynamoStore(projection.DynamoConfig{Client: k.state.DynamoDBClient(),
		Tables: projection.Tables{Views: k.deployed.Resources["ViewsTable"], Totals: k.deployed.Resources["TotalsTable"]}})
	require.NoError(t, err)
	view, err := views.View(t.Context(), j1)
	require.NoError(t, err)
	require.Equal(t, before.Version, view.Version)
	totals, err := views.Totals(t.Context(), "t-1")
	require.NoError(t, err)
	require.Equal(t, int64(2), totals.Completed)
	require.Equal(t, before.Progress+after.Progress, totals.Processed)

	// The records that are not JSON are parked under their key, on each
	// topic's quarantine.
	holds, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: k.state.DynamoDBClient(), Table: k.deployed.Resources["QuarantineTable"]})
	require.NoError(t, err)
	for _, topic := range []string{commands, evts} {
		h, err := holds.Hold(t.Context(), topic, quarantine.KafkaGroup(notJSON))
		require.NoError(t, err, topic)
		require.Equal(t, quarantine.StateHeld, h.State, topic)
		require.Equal(t, int64(1), h.Parked, topic)
	}

	// The on-failure bucket holds the two null-key records, each once,
	// given up after the mappings' retries; nothing else.
	given := givenUp(t, k.state.S3Client(), mappings["worker"].FailureBucket)
	require.Equal(t, map[string]map[string][]int64{
		k.stack + "-worker":    {fmt.Sprintf("%s-%d", commands, partition(commands, j2)): {nullKey["worker"]}},
		k.stack + "-projector": {fmt.Sprintf("%s-%d", evts, partition(evts, j2)): {nullKey["projector"]}},
	}, given.records)
	require.Equal(t, map[string]int{k.stack + "-worker": 8, k.stack + "-projector": 10}, given.invocations,
		"1 + MaximumRetryAttempts (7 and 9) invocations")
}

// submitJob creates a job of tenant through the API, as a client does.
func submitJob(t *testing.T, p *pipeline.Pipeline, tenant, intent string) string {
	t.Helper()
	resp, err := p.HTTP(t.Context(), demo.APIRequest(http.MethodPost, "/jobs", tenant, intent, `{"spec":{"page_size":"2"}}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, resp.Body)
	var body struct {
		JobID string `json:"job_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &body))
	return body.JobID
}

// waitProjected waits until job id is final and its view shows its last
// version, and returns the job.
func waitProjected(t *testing.T, k localDeployment, id string) jobs.Job {
	t.Helper()
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: k.state.DynamoDBClient(), Table: k.deployed.Resources["JobsTable"]})
	require.NoError(t, err)
	views, err := projection.NewDynamoStore(projection.DynamoConfig{Client: k.state.DynamoDBClient(),
		Tables: projection.Tables{Views: k.deployed.Resources["ViewsTable"], Totals: k.deployed.Resources["TotalsTable"]}})
	require.NoError(t, err)
	var job jobs.Job
	require.Eventually(t, func() bool {
		job, err = store.Get(t.Context(), id)
		if err != nil || !job.Status.Final() {
			return false
		}
		v, err := views.View(t.Context(), id)
		return err == nil && v.Version == job.Version
	}, 3*time.Minute, 200*time.Millisecond, "job %s final and projected", id)
	return job
}

func endOffsets(t *testing.T, brokers, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	require.NoError(t, err)
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topic)
	require.NoError(t, err)
	out := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// givenUpRecords are the records an on-failure bucket holds, by function
// then topic-partition, and each function's invocations of them.
type givenUpRecords struct {
	records     map[string]map[string][]int64
	invocations map[string]int
}

// givenUp reads every on-failure record of bucket: each object is one
// span given up, its payload the event that held its records.
func givenUp(t *testing.T, s3c *s3.Client, bucket string) givenUpRecords {
	t.Helper()
	keys, err := demo.FailedRecords(t.Context(), s3c, bucket)
	require.NoError(t, err)
	out := givenUpRecords{records: map[string]map[string][]int64{}, invocations: map[string]int{}}
	for _, key := range keys {
		obj, err := s3c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		require.NoError(t, err)
		var rec localesm.KafkaOnFailureRecord
		require.NoError(t, json.NewDecoder(obj.Body).Decode(&rec))
		require.NoError(t, obj.Body.Close())
		require.Equal(t, localesm.ConditionRetryAttemptsExhausted, rec.RequestContext.Condition, key)
		fn := rec.RequestContext.FunctionARN[strings.LastIndex(rec.RequestContext.FunctionARN, ":")+1:]
		out.invocations[fn] = rec.RequestContext.ApproximateInvokeCount
		var escaped string // the event as an escaped JSON string, as AWS's S3 example has it
		require.NoError(t, json.Unmarshal(rec.Payload, &escaped), key)
		var event events.KafkaEvent
		require.NoError(t, json.Unmarshal([]byte(escaped), &event), key)
		if out.records[fn] == nil {
			out.records[fn] = map[string][]int64{}
		}
		for tp, recs := range event.Records {
			for _, r := range recs {
				out.records[fn][tp] = append(out.records[fn][tp], r.Offset)
			}
		}
	}
	return out
}
