//go:build integration

package test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// Each function of template-kafka.yaml, its bootstrap built with the kafka
// tag as that template's build makes it (pipeline.TransportTags), within
// the 10 MB goal as deployed (linux/arm64), and started under the runtime
// interface emulator with the settings template-kafka.yaml gives it: its
// init measured as TestEachFunctionAnswersItsSampleUnderTheRIE measures
// the SQS functions' (Lambda's Init Duration, the emulator's INIT REPORT;
// the median of six cold starts, each a fresh emulator invoked once with an
// event that changes nothing: an empty batch, a dry run, a GET of no job).
// No time is asserted. The relay produces nothing for an empty batch, so
// it dials no broker: its init is its start-up alone, as a deployed relay's
// is (it dials at its first record; a SCRAM relay reads its secret at
// init, which the local broker, taking no authentication, does not need).
func TestEachKafkaFunctionStartsUnderTheRIE(t *testing.T) {
	t.Parallel()
	k := deployKafka(t, "kafka-fn", nil)
	require.NotEmpty(t, k.state.RIE, "FIFOWORKER_RIE names the runtime interface emulator (make test's local run sets it)")
	tags := pipeline.TransportTags("kafka")
	bootstraps, err := pipeline.BuildBootstrapsFor(t.Context(), pipeline.BootstrapConfig{Root: "..", Dir: filepath.Join(t.TempDir(), "bin"), Tags: tags})
	require.NoError(t, err)
	deployedBuild, err := pipeline.BuildBootstrapsFor(t.Context(), pipeline.BootstrapConfig{Root: "..", Dir: filepath.Join(t.TempDir(), "arm64"), GOARCH: "arm64", Tags: tags})
	require.NoError(t, err)
	for _, fn := range pipeline.Functions {
		requireWithinBootstrapGoal(t, "template-kafka.yaml", fn, fileSize(t, deployedBuild[fn]))
	}

	start := func() (*pipeline.Pipeline, string) {
		logs := t.TempDir()
		p, err := pipeline.Build(t.Context(), pipeline.Config{
			Template: k.tpl, Deployed: k.deployed, StackName: k.stack, Region: k.state.Region, Endpoints: k.state.Env(),
			Mode: pipeline.UnderRIE, RIE: k.state.RIE, Bootstraps: bootstraps, LogDir: logs,
		})
		require.NoError(t, err)
		return p, logs
	}
	var get events.APIGatewayV2HTTPRequest
	raw, err := os.ReadFile("../events/http-get-job.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &get))
	noop := map[string]any{
		"intake": get, "relay": events.DynamoDBEvent{}, "worker": events.KafkaEvent{EventSource: "SelfManagedKafka"},
		"projector": events.KafkaEvent{EventSource: "SelfManagedKafka"}, "sweeper": map[string]any{"dry_run": true},
	}
	inits := coldStarts(t, 6, start, noop)
	for _, fn := range pipeline.Functions {
		require.Len(t, inits[fn], 6, fn)
		t.Log(coldStartLine(fn, "kafka", fileSize(t, deployedBuild[fn]), fileSize(t, bootstraps[fn]), inits[fn]))
	}
}

// The Kafka samples of events/ come from the topics of a stack deployed
// with template-kafka.yaml's defaults (the files `sam local invoke -e`
// takes, with the topics given to the worker and the projector by
// --env-vars, as the SQS samples' queues are).
const (
	sampleCommandsTopic = "fifoworker-commands"
	sampleEventsTopic   = "fifoworker-events"
)

// Each Kafka consumer's built bootstrap (the kafka tag), under the runtime
// interface emulator with the settings template-kafka.yaml gives it,
// answers its events/ sample with the golden response beside it, twice
// (the second a redelivery): the worker runs the commands of jobs that
// exist, the projector projects their events, and in each sample a record
// with a null key (a valid body, produced by something other than the
// relay) is the one reported, by its topic-partition and offset, while
// the records of the jobs beside it in its partition complete, and a
// malformed record under job-45's key holds that key in the topic's
// quarantine and is not reported. The relay answers the stream sample as
// on SQS (its malformed job-43 image is the record to retry), producing
// the others to the stack's topics, each record stamped with
// TOPIC_PARTITIONS, which the local broker's topics have.
func TestEachKafkaFunctionAnswersItsSampleUnderTheRIE(t *testing.T) {
	t.Parallel()
	k := deployKafka(t, "kafka-sample", nil)
	require.NotEmpty(t, k.state.RIE, "FIFOWORKER_RIE names the runtime interface emulator (make test's local run sets it)")
	defaults, err := samtemplate.Load("../template-kafka.yaml")
	require.NoError(t, err)
	require.Equal(t, []string{sampleCommandsTopic, sampleEventsTopic},
		[]string{fmt.Sprint(defaults.Parameters["CommandsTopicName"].Default), fmt.Sprint(defaults.Parameters["EventsTopicName"].Default)},
		"the samples' topics are the template's defaults")
	bootstraps, err := pipeline.BuildBootstrapsFor(t.Context(), pipeline.BootstrapConfig{Root: "..", Dir: filepath.Join(t.TempDir(), "bin"), Tags: pipeline.TransportTags("kafka")})
	require.NoError(t, err)
	p, err := pipeline.Build(t.Context(), pipeline.Config{
		Template: k.tpl, Deployed: k.deployed, StackName: k.stack, Region: k.state.Region, Endpoints: k.state.Env(),
		Mode: pipeline.UnderRIE, RIE: k.state.RIE, Bootstraps: bootstraps, LogDir: t.TempDir(),
		Settings: map[string]map[string]string{
			"worker":    {"COMMANDS_TOPIC": sampleCommandsTopic},
			"projector": {"EVENTS_TOPIC": sampleEventsTopic},
		},
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Stop()) }()
	partitions := fmt.Sprint(k.tpl.Parameters["TopicPartitions"].Default)

	var stream events.DynamoDBEvent
	readSample(t, "dynamodb-jobs-stream.json", &stream)
	var relayed events.DynamoDBEventResponse
	require.NoError(t, p.Invoke(t.Context(), "relay", stream, &relayed))
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: stream.Records[3].Change.SequenceNumber}}, relayed.BatchItemFailures,
		"the sample's malformed job-43 image is the record to retry")
	produced := readTopic(t, k.state.Kafka, k.stack+"-commands")
	require.NotEmpty(t, produced)
	for _, r := range produced {
		var stamps []string
		for _, h := range r.Headers {
			if h.Key == kafka.PartitionCountHeader {
				stamps = append(stamps, string(h.Value))
			}
		}
		require.Equal(t, []string{partitions}, stamps, "%s: the relay stamps TOPIC_PARTITIONS", r.Topic)
	}

	commands := kafkaSample(t, "kafka-commands-batch.json", sampleCommandsTopic, partitions)
	const articles = 3
	require.NoError(t, demo.SeedArticles(t.Context(), k.state.DynamoDBClient(), k.deployed.Resources["ArticlesTable"], map[string]int{"t-1": articles}))
	jobStore, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: k.state.DynamoDBClient(), Table: k.deployed.Resources["JobsTable"]})
	require.NoError(t, err)
	sampleJobs := map[string]bool{}
	for _, recs := range commands.Records {
		for _, rec := range recs {
			cmd, err := outbox.DecodeCommand(decodeBase64(t, rec.Value))
			if err != nil || rec.Key == "" || sampleJobs[cmd.JobID] {
				continue // the malformed and the null-key records: they never reach a job
			}
			sampleJobs[cmd.JobID] = true
			_, err = jobStore.Create(t.Context(), jobs.CreateRequest{JobID: cmd.JobID, IntentID: "worker-sample-" + cmd.IntentID, Tenant: cmd.Tenant})
			require.NoError(t, err, cmd.JobID)
		}
	}
	require.Len(t, sampleJobs, 3)
	invokeKafkaSample(t, p, "worker", commands, "kafka-commands-batch-response.json")
	for id := range sampleJobs {
		j, err := jobStore.Get(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusCompleted, j.Status, "%s: %+v", id, j.Error)
		require.Equal(t, int64(articles), j.Progress, id)
	}

	evts := kafkaSample(t, "kafka-events-batch.json", sampleEventsTopic, partitions)
	invokeKafkaSample(t, p, "projector", evts, "kafka-events-batch-response.json")

	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: k.state.DynamoDBClient(), Table: k.deployed.Resources["QuarantineTable"]})
	require.NoError(t, err)
	for _, topic := range []string{sampleCommandsTopic, sampleEventsTopic} {
		h, err := store.Hold(t.Context(), topic, "job-45")
		require.NoError(t, err, topic)
		require.Equal(t, quarantine.StateHeld, h.State, "%s: the malformed record holds its key", topic)
		require.Equal(t, int64(1), h.Parked, topic)
	}
}

// readSample decodes events/name into v.
func readSample(t *testing.T, name string, v any) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../events", name))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, v), name)
	return raw
}

// kafkaSample is events/name, a Kafka event of topic: it survives a
// decode and encode unchanged, its records are under their
// "<topic>-<partition>" keys, and each record of the relay (one with an
// outbox-id header) carries partitions, the template's count, and is in
// the partition its key hashes to over it, as the relay's producer puts it.
func kafkaSample(t *testing.T, name, topic, partitions string) events.KafkaEvent {
	t.Helper()
	var ev events.KafkaEvent
	raw := readSample(t, name, &ev)
	again, err := json.Marshal(ev)
	require.NoError(t, err)
	require.JSONEq(t, string(raw), string(again), "%s: round trip", name)
	var n int
	_, err = fmt.Sscan(partitions, &n)
	require.NoError(t, err)
	keyed := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	for tp, recs := range ev.Records {
		for _, rec := range recs {
			require.Equal(t, topic, rec.Topic, name)
			require.Equal(t, kafka.TopicPartition(rec.Topic, rec.Partition), tp, name)
			var relays bool
			for _, h := range rec.Headers {
				if v, ok := h[kafka.PartitionCountHeader]; ok {
					require.Equal(t, partitions, string(v), "%s %s@%d", name, tp, rec.Offset)
				}
				_, ok := h["outbox-id"]
				relays = relays || ok
			}
			if relays {
				key := decodeBase64(t, rec.Key)
				require.Equal(t, keyed.Partition(&kgo.Record{Key: []byte(key)}, n), int(rec.Partition), "%s: %s's partition", name, key)
			}
		}
	}
	return ev
}

// invokeKafkaSample invokes fn with ev twice, and each time fn's response
// is the golden one, events/golden.
func invokeKafkaSample(t *testing.T, p *pipeline.Pipeline, fn string, ev events.KafkaEvent, golden string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("../events", golden))
	require.NoError(t, err)
	for i := range 2 {
		var got json.RawMessage
		require.NoError(t, p.Invoke(t.Context(), fn, ev, &got), fn)
		require.JSONEq(t, string(want), string(got), "%s's response, invocation %d", fn, i+1)
	}
}

func decodeBase64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return string(b)
}

// readTopic reads every record of topic, from its start to the end offsets
// the broker gives now.
func readTopic(t *testing.T, brokers, topic string) []*kgo.Record {
	t.Helper()
	var want int64
	for _, end := range endOffsets(t, brokers, topic) {
		want += end
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	for int64(len(recs)) < want {
		fs := cl.PollFetches(t.Context())
		fs.EachError(func(_ string, _ int32, err error) { require.NoError(t, err) })
		recs = append(recs, fs.Records()...)
	}
	return recs
}
