package pipeline

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// canonicalFlags writes go build's flags one way: each flag that takes a
// value (-tags, -ldflags, -gcflags) as -flag=value, whether it was given
// so or as two arguments, so that a GOFLAGS list, a Makefile's command
// line and BootstrapConfig.flags compare.
func canonicalFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if slices.Contains([]string{"-tags", "-ldflags", "-gcflags"}, a) && i+1 < len(args) {
			a += "=" + args[i+1]
			i++
		}
		out = append(out, a)
	}
	return out
}

// documentedGOFLAGS is the GOFLAGS of the one `sam build` line of the
// file at path that contains mark.
func documentedGOFLAGS(t *testing.T, path, mark string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var found []string
	for line := range strings.Lines(string(raw)) {
		if !strings.Contains(line, "sam build") || !strings.Contains(line, mark) {
			continue
		}
		_, rest, ok := strings.Cut(line, `GOFLAGS="`)
		require.True(t, ok, "%s: %q sets no GOFLAGS", path, line)
		goflags, _, ok := strings.Cut(rest, `"`)
		require.True(t, ok, "%s: %q", path, line)
		require.Contains(t, line, "CGO_ENABLED=0", "%s: the build is without cgo, as BuildBootstrapsFor's", path)
		found = append(found, goflags)
	}
	require.Len(t, found, 1, "%s: one `sam build` line containing %q", path, mark)
	return strings.Fields(found[0])
}

// The build commands the README, docs/KAFKA.md and `make bootstraps` give
// pass exactly the flags BuildBootstrapsFor passes for their template: the
// deployed bootstraps are the ones the tests measured and ran.
func TestTheDocumentedBuildsPassTheBuildsFlags(t *testing.T) {
	t.Parallel()
	sqs := canonicalFlags(BootstrapConfig{}.flags())
	kafka := canonicalFlags(BootstrapConfig{Tags: TransportTags(KafkaTag)}.flags())
	require.Equal(t, sqs, documentedGOFLAGS(t, "../../../README.md", "sam build"), "README.md's sam build")
	require.Equal(t, kafka, documentedGOFLAGS(t, "../../../docs/KAFKA.md", "-t template-kafka.yaml"), "docs/KAFKA.md's sam build")
	for transport, want := range map[string][]string{"sqs": sqs, "kafka": kafka} {
		out, err := exec.CommandContext(t.Context(), "make", "-s", "-n", "-C", "../../..", "bootstraps", "TRANSPORT="+transport).CombinedOutput()
		require.NoError(t, err, "%s", out)
		var builds int
		for line := range strings.Lines(string(out)) {
			_, args, ok := strings.Cut(line, " go build ")
			if !ok {
				continue
			}
			builds++
			args, _, _ = strings.Cut(args, " -o ")
			require.Equal(t, want, canonicalFlags(strings.Fields(args)), "make bootstraps TRANSPORT=%s: %s", transport, line)
			require.Contains(t, line, "CGO_ENABLED=0", transport)
		}
		require.Equal(t, 1, builds, "make bootstraps TRANSPORT=%s: one go build line in\n%s", transport, out)
	}
}

// A bootstrap of the SQS wiring deployed with template-kafka.yaml refuses
// to start and names the build to make: the kafka build's tags, all of
// them, as BuildBootstrapsFor passes them (a build with the kafka tag
// alone would bring net/http's HTTP/2 back, 0.33 to 0.46 MB).
func TestTheOtherTransportsRefusalNamesTheKafkaBuildsTags(t *testing.T) {
	t.Parallel()
	flags := BootstrapConfig{Tags: TransportTags(KafkaTag)}.flags()
	tags := flags[slices.Index(flags, "-tags")+1]
	env := startup.NewEnvFrom(map[string]string{"TRANSPORT": startup.TransportKafka})
	startup.CheckTransport(env, startup.TransportSQS)
	require.ErrorContains(t, env.Err(), "-tags "+tags+" ")
}
