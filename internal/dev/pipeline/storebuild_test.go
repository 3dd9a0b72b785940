package pipeline

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// bootstrapDeps is every package function fn's bootstrap links when built
// with tags beside BuildFlags' (linux/arm64, as the templates deploy).
func bootstrapDeps(t *testing.T, fn string, tags ...string) []string {
	t.Helper()
	args := []string{"list", "-deps", "-tags", strings.Join(append([]string{BuildFlags[1]}, tags...), ","), "./functions/" + fn}
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = "../../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, exit.Stderr)
	}
	require.NoError(t, err)
	return strings.Fields(string(out))
}

// pgxPackages are the deps of the pgx module.
func pgxPackages(deps []string) []string {
	var out []string
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/jackc/") {
			out = append(out, d)
		}
	}
	return out
}

// No DynamoDB bootstrap links pgx: each function built for template.yaml
// (no tag) or template-kafka.yaml (kafka) reaches no package of
// github.com/jackc, though pkg/jobs, pkg/quarantine and the projection
// hold PostgreSQL stores (on database/sql alone) and the wiring holds the
// PostgreSQL builders (internal/lambdawire/pgopen, which imports the
// driver, is the PostgreSQL bootstraps' only). Built with the postgres
// tag, each links it, and functions/migrate exists: the list sees the tag.
func TestNoDynamoDBBootstrapLinksPgx(t *testing.T) {
	t.Parallel()
	const module = "github.com/fifoworker/fifoworker"
	for _, fn := range Functions {
		for _, tags := range [][]string{nil, {KafkaTag}} {
			deps := bootstrapDeps(t, fn, tags...)
			require.Contains(t, deps, module+"/functions/"+fn)
			require.Empty(t, pgxPackages(deps), "%s built with %v links pgx", fn, tags)
			require.NotContains(t, deps, module+"/internal/lambdawire/pgopen", "%s built with %v", fn, tags)
		}
	}
	for _, fn := range append(slices.Clone(Functions), "migrate") {
		deps := bootstrapDeps(t, fn, PostgresTag)
		require.Contains(t, deps, "github.com/jackc/pgx/v5/stdlib", "%s built with the postgres tag", fn)
		require.Contains(t, deps, module+"/internal/lambdawire/pgopen", fn)
	}
}

// `make bootstraps STORE=postgres` builds the six bootstraps (the five
// and migrate) with exactly the flags BuildBootstrapsFor passes for
// template-postgres.yaml (StoreTags), and a DynamoDB bootstrap deployed
// with that template names those tags, all of them.
func TestThePostgresBuildsPassTheBuildsFlags(t *testing.T) {
	t.Parallel()
	want := canonicalFlags(BootstrapConfig{Tags: StoreTags(StorePostgres)}.flags())
	out, err := exec.CommandContext(t.Context(), "make", "-s", "-n", "-C", "../../..", "bootstraps", "STORE=postgres").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "migrate")
	var builds int
	for line := range strings.Lines(string(out)) {
		_, args, ok := strings.Cut(line, " go build ")
		if !ok {
			continue
		}
		builds++
		args, _, _ = strings.Cut(args, " -o ")
		require.Equal(t, want, canonicalFlags(strings.Fields(args)), line)
		require.Contains(t, line, ".aws-sam-go/postgres/", line)
	}
	require.Equal(t, 1, builds, "one go build line in\n%s", out)

	flags := BootstrapConfig{Tags: StoreTags(StorePostgres)}.flags()
	tags := flags[slices.Index(flags, "-tags")+1]
	env := startup.NewEnvFrom(map[string]string{"STORE": startup.StorePostgres})
	startup.CheckStore(env, startup.StoreDynamoDB)
	require.ErrorContains(t, env.Err(), "-tags "+tags+" ")
}
