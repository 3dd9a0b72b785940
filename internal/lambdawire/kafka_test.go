package lambdawire

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// kafkaWorkerEnv is every setting WorkerKafka reads, each valid.
var kafkaWorkerEnv = map[string]string{
	"TRANSPORT": "kafka", "JOBS_TABLE": "jobs", "ARTICLES_TABLE": "articles", "CANDIDATES_BUCKET": "candidates",
	"MAX_GENERATIONS": "3", "EPHEMERAL_STORAGE_MB": "1536", "MAX_CANDIDATE_BYTES": "134217728",
	"COMMANDS_TOPIC": "commands", "QUARANTINE_TABLE": "quarantine", "QUARANTINE_BUCKET": "candidates", "QUARANTINE_AFTER_ATTEMPTS": "6",
	"TOPIC_PARTITIONS": "6",
}

// kafkaProjectorEnv is every setting ProjectorKafka reads, each valid.
var kafkaProjectorEnv = map[string]string{
	"TRANSPORT": "kafka", "VIEWS_TABLE": "views", "TOTALS_TABLE": "totals", "JOBS_TABLE": "jobs",
	"EVENTS_TOPIC": "events", "QUARANTINE_TABLE": "quarantine", "QUARANTINE_BUCKET": "candidates", "QUARANTINE_AFTER_ATTEMPTS": "6",
	"TOPIC_PARTITIONS": "6",
}

func buildWorkerKafka(env map[string]string) error {
	_, err := WorkerKafka(startup.NewEnvFrom(env), aws.Config{Region: "eu-west-1"}, slog.New(slog.DiscardHandler))
	return err
}

func buildProjectorKafka(env map[string]string) error {
	_, err := ProjectorKafka(startup.NewEnvFrom(env), aws.Config{Region: "eu-west-1"}, slog.New(slog.DiscardHandler))
	return err
}

// The Kafka consumers read the tables' and the bucket's settings the SQS
// ones do, and no queue's: each is required, named when missing or out of
// its bounds (MAX_GENERATIONS at exactly 1 and 4, refused at 0 and 5), and
// every problem is named at once, the quarantine's among them.
func TestKafkaConsumersNameEveryMisconfiguredSetting(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		full  map[string]string
		build func(map[string]string) error
	}{
		"worker":    {kafkaWorkerEnv, buildWorkerKafka},
		"projector": {kafkaProjectorEnv, buildProjectorKafka},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, tc.build(tc.full))
			required := 0
			for k := range tc.full {
				env := maps.Clone(tc.full)
				delete(env, k)
				err := tc.build(env)
				switch k {
				case "MAX_GENERATIONS", "MAX_CANDIDATE_BYTES", "QUARANTINE_AFTER_ATTEMPTS":
					require.NoError(t, err, "%s has a default", k)
				default:
					required++
					require.ErrorContains(t, err, k+" is not set")
					require.ErrorContains(t, err, "misconfigured function")
				}
			}
			require.Positive(t, required)
			none := map[string]string{}
			err := tc.build(none)
			for k := range tc.full {
				if k != "MAX_GENERATIONS" && k != "MAX_CANDIDATE_BYTES" && k != "QUARANTINE_AFTER_ATTEMPTS" {
					require.ErrorContains(t, err, k+" is not set", "every problem at once")
				}
			}
		})
	}
	for v, problem := range map[string]string{
		"0": `MAX_GENERATIONS="0" is not an integer in [1, 4]`, "1": "", "4": "",
		"5": `MAX_GENERATIONS="5" is not an integer in [1, 4]`,
	} {
		env := maps.Clone(kafkaWorkerEnv)
		env["MAX_GENERATIONS"] = v
		if err := buildWorkerKafka(env); problem == "" {
			require.NoError(t, err, v)
		} else {
			require.ErrorContains(t, err, problem)
		}
	}
	env := maps.Clone(kafkaWorkerEnv)
	env["EPHEMERAL_STORAGE_MB"] = "512"
	require.ErrorContains(t, buildWorkerKafka(env), "134217728 bytes fit 3 times in the spool of EPHEMERAL_STORAGE_MB=512",
		"the spool's rule holds on Kafka too")
}

// A bootstrap runs the transport it was built for: template-kafka.yaml
// sets TRANSPORT=kafka, and the SQS builders (the build without the kafka
// tag) refuse it, naming the build to make, as the Kafka builders refuse
// any other transport, TRANSPORT unset (template.yaml's SQS) included.
func TestEachBuilderRefusesTheOtherTransport(t *testing.T) {
	t.Parallel()
	cfg, log := aws.Config{Region: "eu-west-1"}, slog.New(slog.DiscardHandler)
	for name, build := range map[string]func(*startup.Env) error{
		"Worker":    func(e *startup.Env) error { _, err := Worker(e, cfg, log); return err },
		"Projector": func(e *startup.Env) error { _, err := Projector(e, cfg, log); return err },
		"Relay":     func(e *startup.Env) error { _, err := Relay(e, cfg, log); return err },
	} {
		err := build(startup.NewEnvFrom(map[string]string{"TRANSPORT": "kafka"}))
		require.ErrorContains(t, err, `TRANSPORT: "kafka", but this bootstrap's wiring is SQS's: build it with the kafka tag (-tags lambda.norpc,nethttpomithttp2,kafka and the -gcflags of docs/KAFKA.md's sam build)`, name)
		for _, ok := range []string{"", "sqs"} {
			require.NotContains(t, build(startup.NewEnvFrom(map[string]string{"TRANSPORT": ok})).Error(), "TRANSPORT", "%s with TRANSPORT %q", name, ok)
		}
	}
	for name, tc := range map[string]struct {
		full  map[string]string
		build func(map[string]string) error
	}{
		"WorkerKafka":    {kafkaWorkerEnv, buildWorkerKafka},
		"ProjectorKafka": {kafkaProjectorEnv, buildProjectorKafka},
	} {
		for v, problem := range map[string]string{
			"sqs":   `TRANSPORT: "sqs", but this bootstrap's wiring is Kafka's: build it without the kafka tag`,
			"":      "TRANSPORT is not set",
			"ksfka": `TRANSPORT: "ksfka" is neither sqs nor kafka`,
		} {
			env := maps.Clone(tc.full)
			env["TRANSPORT"] = v
			require.ErrorContains(t, tc.build(env), problem, "%s with TRANSPORT %q", name, v)
		}
	}
	err := buildWorkerKafka(map[string]string{"TRANSPORT": "ksfka"})
	require.ErrorContains(t, err, `TRANSPORT: "ksfka" is neither sqs nor kafka`)
}

// The Kafka worker runs at most ten lanes at once, whatever the mapping's
// BatchSize: ten candidates of MAX_CANDIDATE_BYTES fit the spool (the
// cold start's check), so no lane ever waits for room, as on SQS, where a
// batch has at most ten groups. Eleven lanes of one partition: ten run,
// the eleventh waits for a slot.
func TestTheKafkaWorkerRunsAtMostTenLanesAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		running, most := 0, 0
		handler := func(ctx context.Context, _ kafka.Record) error {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(time.Second) // every lane that can start has, before this returns
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		}
		p, err := kafka.New(workerProcessor(kafka.Config{Handler: handler}))
		require.NoError(t, err)
		ev := events.KafkaEvent{Records: map[string][]events.KafkaRecord{}}
		for i := range 11 {
			ev.Records["commands-0"] = append(ev.Records["commands-0"], events.KafkaRecord{
				Topic: "commands", Partition: 0, Offset: int64(i), Key: base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "job-%d", i)),
			})
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		resp, err := p.Process(ctx, ev)
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		require.Equal(t, lanesPerBatch, most)
	})
}

// Each function of this package builds from exactly the settings
// template-kafka.yaml gives it, the Kafka consumers and intake and the
// sweeper, whose bootstraps are the same on both transports (the relay's
// is internal/lambdawire/kafkarelay's test), and a variable the template
// forgets is named.
func TestTheFunctionsBuildFromTheKafkaTemplatesEnvironment(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../template-kafka.yaml")
	require.NoError(t, err)
	cfg, log := aws.Config{Region: "eu-west-1"}, slog.New(slog.DiscardHandler)
	for fn, build := range map[string]func(map[string]string) error{
		"WorkerFunction":    buildWorkerKafka,
		"ProjectorFunction": buildProjectorKafka,
		"IntakeFunction":    func(env map[string]string) error { _, err := Intake(startup.NewEnvFrom(env), cfg, log); return err },
		"SweeperFunction":   func(env map[string]string) error { _, err := Sweeper(startup.NewEnvFrom(env), cfg, log); return err },
	} {
		env := templateEnv(t, tpl, fn)
		require.NoError(t, build(env), "%s with template-kafka.yaml's environment %v", fn, env)
		for k := range env {
			without := maps.Clone(env)
			delete(without, k)
			if err := build(without); err != nil {
				require.ErrorContains(t, err, k+" is not set", fn)
			}
		}
	}
}
