package samtemplate_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
)

// tagsFlag is a -tags= flag as the templates' comments and docs/POSTGRES.md
// write it: a comma-separated list without spaces.
var tagsFlag = regexp.MustCompile(`-tags=([A-Za-z0-9_.,]+)`)

// missingStoreTags is, for each -tags= flag in src, the tags of
// pipeline.StoreTags("postgres") it does not name, and whether src has
// any -tags= flag at all.
func missingStoreTags(src string) (missing []string, found bool) {
	for _, m := range tagsFlag.FindAllStringSubmatch(src, -1) {
		found = true
		named := strings.Split(m[1], ",")
		for _, tag := range pipeline.StoreTags(pipeline.PostgresTag) {
			if !slices.Contains(named, tag) {
				missing = append(missing, m[0]+" lacks "+tag)
			}
		}
	}
	return missing, found
}

// TestThePostgresBuildCommandsNameTheStoresTags: the `sam build` the
// PostgreSQL templates and docs/POSTGRES.md tell an operator to run names
// every build tag the pipeline builds their bootstraps with, so that a
// bootstrap built by hand is the one measured.
func TestThePostgresBuildCommandsNameTheStoresTags(t *testing.T) {
	for _, path := range []string{"../../../template-postgres.yaml", "../../../template-kafka-postgres.yaml", "../../../docs/POSTGRES.md"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		missing, found := missingStoreTags(string(raw))
		if !found {
			t.Errorf("%s: no -tags= flag", path)
		}
		for _, m := range missing {
			t.Errorf("%s: %s", path, m)
		}
	}
}

func TestMissingStoreTagsCatchesADroppedTag(t *testing.T) {
	if m, _ := missingStoreTags("GOFLAGS=-tags=lambda.norpc,kafka"); len(m) != 1 {
		t.Errorf("a flag without %s: %v, want one problem", pipeline.PostgresTag, m)
	}
	if m, found := missingStoreTags("-tags=lambda.norpc," + pipeline.PostgresTag); len(m) != 0 || !found {
		t.Errorf("a full flag: %v, %v", m, found)
	}
}
