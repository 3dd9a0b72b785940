package pipeline

import (
	"strings"
	"testing"
)

// The progress line names the flags the build passes, so a flag added to
// BuildFlags or KafkaGCFlags shows in `make demo RIE=1`'s output.
func TestDescribeNamesWhatTheBuildPasses(t *testing.T) {
	for _, c := range []BootstrapConfig{{}, {Tags: TransportTags(KafkaTag)}} {
		got := c.Describe()
		want := "CGO_ENABLED=0 go build " + strings.Join(c.flags(), " ")
		if got != want {
			t.Errorf("Describe() = %q, want %q", got, want)
		}
		for _, f := range c.flags() {
			if !strings.Contains(got, f) {
				t.Errorf("Describe() = %q leaves out %q", got, f)
			}
		}
	}
	if kafka := (BootstrapConfig{Tags: []string{KafkaTag}}).Describe(); !strings.Contains(kafka, "nethttpomithttp2,kafka") || !strings.Contains(kafka, KafkaGCFlags[1]) {
		t.Errorf("the Kafka build's description %q leaves out its tag or its -gcflags", kafka)
	}
}
