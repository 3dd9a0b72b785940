package pipeline

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every bootstrap, of either transport, is built without net/http's
// bundled HTTP/2 (the nethttpomithttp2 tag): net/http then compiles its
// stand-in (omithttp2.go) instead of the bundle (h2_bundle.go), which is
// 0.33 to 0.46 MB of each arm64 bootstrap (docs/BENCHMARKS.md). The
// bootstraps speak HTTP/1.1 only, which is all the Lambda runtime API and
// the AWS endpoints they call use.
func TestBootstrapsAreBuiltWithoutHTTP2(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"sqs", "kafka"} {
		flags := BootstrapConfig{Root: ".", Dir: "out", Tags: TransportTags(transport)}.flags()
		tags := flags[slices.Index(flags, "-tags")+1]
		out, err := exec.CommandContext(t.Context(), "go", "list", "-tags", tags, "-f", "{{join .GoFiles \" \"}}", "net/http").CombinedOutput()
		require.NoError(t, err, "%s", out)
		files := strings.Fields(string(out))
		require.Contains(t, files, "omithttp2.go", "%s: -tags %s", transport, tags)
		require.NotContains(t, files, "h2_bundle.go", "%s: -tags %s", transport, tags)
	}
}
