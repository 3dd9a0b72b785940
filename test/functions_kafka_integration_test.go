//go:build integration

package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
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
