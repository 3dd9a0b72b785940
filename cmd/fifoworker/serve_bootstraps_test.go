package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// `local serve --rie` builds the bootstraps of the template it serves: with
// the kafka tag for template-kafka.yaml (whose functions refuse to start
// from a bootstrap without it: TRANSPORT=kafka), without it for
// template.yaml, as the demo and `make bootstraps` build them.
func TestServeBuildsTheBootstrapsOfItsTemplatesTransport(t *testing.T) {
	t.Parallel()
	for file, transport := range map[string]string{"template.yaml": "sqs", "template-kafka.yaml": "kafka"} {
		tpl, err := samtemplate.Load(filepath.Join("..", "..", file))
		require.NoError(t, err, file)
		o := serveOptions{Template: tpl, Root: "root", LogDir: "logs"}
		require.Equal(t, pipeline.BootstrapConfig{Root: "root", Dir: filepath.Join("logs", "bootstraps"), Tags: pipeline.TransportTags(transport)}, o.bootstraps(), file)
	}
}
