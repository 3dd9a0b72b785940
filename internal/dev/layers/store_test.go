package layers_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/layers"
)

const dynamoDBClient = "github.com/aws/aws-sdk-go-v2/service/dynamodb"

// What the PostgreSQL bootstraps reach of the DynamoDB SDK, and through
// which packages. The worker calls it: the reference task reads a
// tenant's articles from DynamoDB on either store (internal/app/tasks).
// The others reach it only because each store's package holds its
// DynamoDB store beside its PostgreSQL one (pkg/jobs, pkg/quarantine,
// internal/app/projection) and internal/lambdawire holds every builder:
// none of those is linked (no DynamoStore is made; go tool nm finds none),
// only the dynamodb package's own initialisation, which
// docs/BENCHMARKS.md ("Bootstraps per store") measures. The relay, a
// package of its own (pgrelay), reaches none. The lists are held exactly,
// so a new way to DynamoDB fails here, and so does the removal of one,
// which then shortens them, as the Kafka consumers' ways to SQS are held
// (transport_test.go).
func TestThePostgresBootstrapsReachDynamoDBOnlyThroughTheseImports(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	through := []string{"internal/app/projection", "internal/app/tasks", "internal/lambdawire", "pkg/jobs", "pkg/quarantine"}
	for fn, want := range map[string][]string{
		"intake": through, "worker": through, "projector": through, "sweeper": through, "migrate": through,
		"relay": nil,
	} {
		lines := goListFormat(t, root, append([]string{"-deps"}, buildFlagsWith(t, "postgres")...),
			"{{.ImportPath}}={{join .Imports \",\"}}", "./functions/"+fn)
		var importers []string
		for _, l := range lines {
			pkg, imports, _ := strings.Cut(l, "=")
			if slices.Contains(strings.Split(imports, ","), dynamoDBClient) {
				importers = append(importers, strings.TrimPrefix(pkg, layers.Module+"/"))
			}
		}
		slices.Sort(importers)
		require.Equal(t, want, importers, fn)
	}
}
