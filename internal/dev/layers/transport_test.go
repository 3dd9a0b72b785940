package layers_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/layers"
)

// Each bootstrap is built for one transport (issue 17): the kafka build
// tag picks functions/<name>/main_kafka.go, and without it main.go. These
// tests hold what each build reaches with go list, which is cheap; what
// each links, measured with go tool nm on the built binaries, is in
// docs/BENCHMARKS.md.

// kafkaBuildFlags are the Lambda build's flags with the kafka tag, as
// template-kafka.yaml's build sets them.
func kafkaBuildFlags(t *testing.T) []string { return buildFlagsWith(t, "kafka") }

// buildFlagsWith are the Lambda build's flags (pipeline.BuildFlags) with
// tag beside lambda.norpc, as a template's build sets them (kafka,
// postgres).
func buildFlagsWith(t *testing.T, tag string) []string {
	t.Helper()
	flags := slices.Clone(layers.Functions.Flags)
	i := slices.Index(flags, "-tags")
	require.GreaterOrEqual(t, i, 0, "the Lambda build names its tags: %v", flags)
	flags[i+1] += "," + tag
	return flags
}

const franzGo = "github.com/twmb/franz-go/..."

// The SQS bootstraps, every function's, reach no Kafka client, and the
// Kafka consumers (worker, projector) none either: only the Kafka relay
// produces. The rules are the functions' rule with franz-go refused.
func TestOnlyTheKafkaRelayReachesAKafkaClient(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, r := range []layers.Rule{sqsBootstraps(), kafkaConsumers(t)} {
		v, err := layers.Check(t.Context(), root, "", r)
		require.NoError(t, err)
		require.Empty(t, joinViolations(v), r.Why)
	}
}

func sqsBootstraps() layers.Rule {
	r := layers.Functions
	r.Name = "sqs-bootstraps-reach-no-kafka-client"
	r.Refuse = append(slices.Clone(r.Refuse), franzGo)
	r.Why = "a bootstrap built without the kafka tag runs on SQS and must not carry franz-go"
	return r
}

func kafkaConsumers(t *testing.T) layers.Rule {
	r := layers.Functions
	r.Name = "kafka-consumers-reach-no-kafka-client"
	r.Patterns = []string{"./functions/worker", "./functions/projector"}
	r.Flags = kafkaBuildFlags(t)
	r.Refuse = append(slices.Clone(r.Refuse), franzGo)
	r.Why = "the Kafka worker and projector take their records from Lambda's event and produce none"
	return r
}

// The rules can fail: a franz-go import added to the wiring, through go
// list -overlay, is reported by both, on every bootstrap it reaches.
func TestAKafkaClientInTheWiringIsReported(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	overlay := writeOverlay(t, filepath.Join(root, "internal", "lambdawire", "injected.go"),
		"package lambdawire\n\nimport _ \"github.com/twmb/franz-go/pkg/kgo\"\n")
	for _, r := range []layers.Rule{sqsBootstraps(), kafkaConsumers(t)} {
		v, err := layers.Check(t.Context(), root, overlay, r)
		require.NoError(t, err)
		for _, fn := range []string{"functions/worker", "functions/projector"} {
			require.True(t, slices.ContainsFunc(v, func(x layers.Violation) bool {
				return x.From == fn && x.Reaches == "github.com/twmb/franz-go/pkg/kgo" && x.Rule == r.Name
			}), "%s: the injected import is not reported for %s; got:\n%s", r.Name, fn, joinViolations(v))
		}
	}
}

// The kafka tag picks the Kafka main of the worker, the projector and the
// relay, and the build without it the SQS main.
func TestTheKafkaTagPicksEachFunctionsKafkaMain(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, fn := range []string{"worker", "projector", "relay"} {
		for _, tc := range []struct {
			flags []string
			file  string
		}{
			{layers.Functions.Flags, "main.go"},
			{kafkaBuildFlags(t), "main_kafka.go"},
		} {
			files := goListFormat(t, root, tc.flags, "{{join .GoFiles \" \"}}", "./functions/"+fn)
			require.Equal(t, []string{tc.file}, files, "%s with %v", fn, tc.flags)
		}
	}
}

// Every function built with the kafka tag, as template-kafka.yaml's build
// makes them, reaches no test code, the in-process broker the tests run
// (kfake) included, nor the SDK's configuration loader (the relay signs
// MSK IAM with the credentials startup.Env.AWSConfig reads); and the Kafka
// relay, the one that produces, does reach the Kafka client.
func TestTheKafkaBootstrapsReachNoTestCode(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	r := layers.Functions
	r.Name = "kafka-bootstraps-reach-no-test-code"
	r.Flags = kafkaBuildFlags(t)
	r.Refuse = append(slices.Clone(r.Refuse), "github.com/twmb/franz-go/pkg/kfake/...",
		"github.com/aws/aws-sdk-go-v2/config", "github.com/aws/aws-sdk-go-v2/service/sts")
	r.Why = "a function built for Kafka carries no test code, no local broker and no configuration loader"
	v, err := layers.Check(t.Context(), root, "", r)
	require.NoError(t, err)
	require.Empty(t, joinViolations(v), r.Why)

	deps := goListFormat(t, root, append([]string{"-deps"}, kafkaBuildFlags(t)...), "{{.ImportPath}}", "./functions/relay")
	require.Contains(t, deps, "github.com/twmb/franz-go/pkg/kgo", "the Kafka relay's build is listed")
	require.Contains(t, deps, layers.Module+"/internal/app/outbox/kafkaout")
}

// What the Kafka worker's build reaches of the SQS SDK, and through which
// packages. It still reaches service/sqs: pkg/fifo imports it for its
// dead-letter sender and is imported by the worker, the projector and the
// tasks for its permanent errors, pkg/quarantine for the operator's
// redrive, and internal/lambdawire (one package for every function, its
// SQS relay builder) and the SQS relay's transport beside it. None of
// them is linked: go tool nm on the Kafka worker finds no SQS client and
// no pkg/fifo processor, only the sqs package's own initialisation (about
// 80 KB). The list is held exactly, so a new way to SQS fails here, and so
// does the removal of one, which then shortens it; it is empty once
// pkg/fifo's SQS sender and pkg/quarantine's leave those packages and the
// SQS builders leave the wiring's package.
func TestTheKafkaWorkerReachesSQSOnlyThroughTheseImports(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	lines := goListFormat(t, root, append([]string{"-deps"}, kafkaBuildFlags(t)...),
		"{{.ImportPath}}={{join .Imports \",\"}}", "./functions/worker")
	var importers []string
	for _, l := range lines {
		pkg, imports, _ := strings.Cut(l, "=")
		if slices.Contains(strings.Split(imports, ","), "github.com/aws/aws-sdk-go-v2/service/sqs") {
			importers = append(importers, strings.TrimPrefix(pkg, layers.Module+"/"))
		}
	}
	slices.Sort(importers)
	require.Equal(t, []string{"internal/app/outbox/sqsout", "internal/lambdawire", "pkg/fifo", "pkg/quarantine"}, importers)
}

// goListFormat runs go list -f format with flags on patterns in the module
// at root, for the Lambda build's platform, and returns its lines' fields.
func goListFormat(t *testing.T, root string, flags []string, format string, patterns ...string) []string {
	t.Helper()
	args := append(append([]string{"list", "-f", format}, flags...), patterns...)
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), layers.Functions.Env...)
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("%w: %s", err, exit.Stderr)
	}
	require.NoError(t, err, "go %v", args)
	return strings.Fields(string(out))
}

// The Kafka relay, the one bootstrap that carries franz-go, links only
// what it runs, so that it stays within the 10 MB goal: a package's
// initialisation is linked whether or not its functions are called, so
// reaching a package costs its init's code and data (the DynamoDB types
// alone, through their schemas, 0.26 MB of an arm64 bootstrap). It reaches
// the start-up code (settings, AWS configuration, Main) but not the other
// functions' builders (internal/lambdawire) nor any AWS service client or
// its types: it calls none, and reads the stream image it relays without
// the DynamoDB types. docs/BENCHMARKS.md has the sizes.
func TestTheKafkaRelayReachesNoOtherBuilderNorAnyServiceClient(t *testing.T) {
	t.Parallel()
	v, err := layers.Check(t.Context(), moduleRoot(t), "", kafkaRelayRule(t))
	require.NoError(t, err)
	require.Empty(t, joinViolations(v), kafkaRelayRule(t).Why)
}

func kafkaRelayRule(t *testing.T) layers.Rule {
	r := layers.Functions
	r.Name = "kafka-relay-reaches-only-what-it-runs"
	r.Patterns = []string{"./functions/relay"}
	r.Flags = kafkaBuildFlags(t)
	r.Refuse = append(slices.Clone(r.Refuse), layers.Module+"/internal/lambdawire",
		"github.com/aws/aws-sdk-go-v2/service/...")
	r.Why = "the Kafka relay calls no AWS service and runs no other function's builder: each package it reaches adds its initialisation to the bootstrap"
	return r
}

// The rule can fail: the DynamoDB types reached from the start-up code,
// through go list -overlay, are reported.
func TestAServiceClientInTheKafkaRelayIsReported(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	overlay := writeOverlay(t, filepath.Join(root, "internal", "lambdawire", "startup", "injected.go"),
		"package startup\n\nimport _ \"github.com/aws/aws-sdk-go-v2/service/dynamodb/types\"\n")
	v, err := layers.Check(t.Context(), root, overlay, kafkaRelayRule(t))
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(v, func(x layers.Violation) bool {
		return x.From == "functions/relay" && x.Reaches == "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	}), "the injected import is not reported; got:\n%s", joinViolations(v))
}
