package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A Kafka template's bootstraps are built with the kafka tag beside
// BuildFlags' tags and KafkaGCFlags, as `make bootstraps TRANSPORT=kafka`
// and template-kafka.yaml's sam build build them; without Tags the flags
// are BuildFlags, unchanged.
func TestBootstrapsCarryTheConfiguredTags(t *testing.T) {
	t.Parallel()
	plain := BootstrapConfig{Root: ".", Dir: "out"}
	require.Equal(t, BuildFlags, plain.flags())
	kafka := BootstrapConfig{Root: ".", Dir: "out", Tags: []string{KafkaTag}}
	sdk := "github.com/aws/aws-sdk-go-v2/service/...=-l"
	require.Equal(t, []string{"-tags", "lambda.norpc,nethttpomithttp2,kafka", "-ldflags", "-s", "-trimpath", "-gcflags", sdk, "-gcflags", "github.com/twmb/franz-go/pkg/kgo=-l"}, kafka.flags())
	require.Equal(t, []string{"-tags", "lambda.norpc,nethttpomithttp2", "-ldflags", "-s", "-trimpath", "-gcflags", sdk}, BuildFlags, "BuildFlags is not changed by a config's tags")
	for _, transport := range []string{"", "sqs"} {
		require.Empty(t, TransportTags(transport), transport)
	}
	require.Equal(t, []string{KafkaTag}, TransportTags("kafka"))
}

// BuildBootstrapsFor refuses a config it cannot build from, naming the
// field, before it runs the compiler.
func TestBuildBootstrapsForRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg   BootstrapConfig
		field string
	}{
		"no root":          {BootstrapConfig{Dir: "out"}, "Root"},
		"no dir":           {BootstrapConfig{Root: "."}, "Dir"},
		"an empty tag":     {BootstrapConfig{Root: ".", Dir: "out", Tags: []string{""}}, "Tags[0]"},
		"a tag with comma": {BootstrapConfig{Root: ".", Dir: "out", Tags: []string{"kafka,x"}}, "Tags[0]"},
		"a tag with space": {BootstrapConfig{Root: ".", Dir: "out", Tags: []string{"kafka", "a b"}}, "Tags[1]"},
		"norpc again":      {BootstrapConfig{Root: ".", Dir: "out", Tags: []string{"lambda.norpc"}}, "Tags[0]"},
	} {
		_, err := BuildBootstrapsFor(t.Context(), tc.cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
	}
}
