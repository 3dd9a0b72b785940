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

// jackcPackages are the deps from github.com/jackc (pgx and its
// dependencies).
func jackcPackages(deps []string) []string {
	var out []string
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/jackc/") {
			out = append(out, d)
		}
	}
	return out
}

// No bootstrap links pgx, and no DynamoDB bootstrap links the project's
// driver. Every function, built for each template (no tag: template.yaml;
// kafka: template-kafka.yaml; postgres: template-postgres.yaml; kafka and
// postgres: template-kafka-postgres.yaml), and functions/migrate, reach no
// package of github.com/jackc: the PostgreSQL ones speak the protocol
// through internal/base/pgwire. Built without the postgres tag, none
// reaches pgwire or internal/lambdawire/pgopen (which opens the pool),
// though pkg/jobs, pkg/quarantine and the projection hold PostgreSQL
// stores (on database/sql alone) and the wiring holds the PostgreSQL
// builders. Built with it, each links both: the list sees the tag.
func TestNoBootstrapLinksPgxAndNoDynamoDBBootstrapLinksPgwire(t *testing.T) {
	t.Parallel()
	const module = "github.com/fifoworker/fifoworker"
	builds := func(fn string, tagSets ...[]string) {
		for _, tags := range tagSets {
			deps := bootstrapDeps(t, fn, tags...)
			require.Contains(t, deps, module+"/functions/"+fn)
			require.Empty(t, jackcPackages(deps), "%s built with %v links pgx", fn, tags)
			postgres := slices.Contains(tags, PostgresTag)
			for _, pkg := range []string{module + "/internal/base/pgwire", module + "/internal/lambdawire/pgopen"} {
				require.Equal(t, postgres, slices.Contains(deps, pkg), "%s built with %v: links %s", fn, tags, pkg)
			}
		}
	}
	for _, fn := range Functions {
		builds(fn, nil, []string{KafkaTag}, []string{PostgresTag}, []string{KafkaTag, PostgresTag})
	}
	builds("migrate", []string{PostgresTag})
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
