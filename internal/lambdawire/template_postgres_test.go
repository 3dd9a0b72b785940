package lambdawire

import (
	"log/slog"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgrelay"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// postgresBuilders are template-postgres.yaml's functions' builders, each
// building from an environment as a bootstrap's main does.
func postgresBuilders(cfg aws.Config) map[string]func(*startup.Env) error {
	log := slog.New(slog.DiscardHandler)
	return map[string]func(*startup.Env) error{
		"IntakeFunction":    func(e *startup.Env) error { _, err := IntakePostgres(pgopen.Open)(e, cfg, log); return err },
		"RelayFunction":     func(e *startup.Env) error { _, err := pgrelay.Relay(pgopen.Open)(e, cfg, log); return err },
		"WorkerFunction":    func(e *startup.Env) error { _, err := WorkerPostgres(pgopen.Open)(e, cfg, log); return err },
		"ProjectorFunction": func(e *startup.Env) error { _, err := ProjectorPostgres(pgopen.Open)(e, cfg, log); return err },
		"SweeperFunction":   func(e *startup.Env) error { _, err := SweeperPostgres(pgopen.Open)(e, cfg, log); return err },
		"MigrateFunction":   func(e *startup.Env) error { _, err := Migrate(pgopen.Open)(e, cfg, log); return err },
	}
}

// Every function of template-postgres.yaml builds from exactly the
// settings that template gives it (Globals' STORE and POSTGRES_*, and its
// own), with the credentials and region Lambda gives a function, which sign
// the IAM tokens and the nudges; each variable it requires, removed, is
// named; and no function builds without its STORE, which names the build.
func TestEveryPostgresFunctionBuildsFromItsTemplatesEnvironment(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../template-postgres.yaml")
	require.NoError(t, err)
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	build := postgresBuilders(cfg)
	require.ElementsMatch(t, tpl.OfType("AWS::Serverless::Function"), slices.Collect(maps.Keys(build)), "a builder for every function of the template")
	for fn, b := range build {
		env := templateEnv(t, tpl, fn)
		require.Equal(t, startup.StorePostgres, env["STORE"], fn)
		require.NoError(t, b(startup.NewEnvFrom(env)), "%s with the template's environment %v", fn, env)
		for k := range env {
			without := maps.Clone(env)
			delete(without, k)
			err := b(startup.NewEnvFrom(without))
			switch k {
			case "STORE":
				require.ErrorContains(t, err, `STORE: "dynamodb", but this bootstrap's wiring is PostgreSQL's`, fn)
			case "POSTGRES_PORT", "POSTGRES_MAX_CONNS", "TENANT_CLAIM", "RESULT_URL_TTL", "MAX_GENERATIONS", "RECOVER_AFTER_RECEIVES",
				"QUARANTINE_AFTER_RECEIVES", "MAX_CANDIDATE_BYTES", "SWEEP_GRACE", "SWEEP_STUCK_AFTER", "SWEEP_REPAIR_AFTER",
				"SWEEP_RECHECK_AFTER", "SWEEP_REPAIR_BUDGET", "SWEEP_MAX_ITEMS":
				require.NoError(t, err, "%s without %s: a default", fn, k)
			default:
				require.ErrorContains(t, err, k+" is not set", fn)
			}
		}
	}
	// The writers nudge the relay: intake, the worker and the sweeper
	// require RELAY_FUNCTION_NAME (checked above, as the template gives it
	// them); the projector and the relay write no job and read none.
	for _, fn := range []string{"IntakeFunction", "WorkerFunction", "SweeperFunction"} {
		require.Contains(t, templateEnv(t, tpl, fn), "RELAY_FUNCTION_NAME", fn)
	}
}

// A PostgreSQL builder deployed with template.yaml (no STORE, tables
// instead of the database) refuses to start and says to build without the
// postgres tag; a DynamoDB builder deployed with template-postgres.yaml
// says to build with it.
func TestEachStoresBuilderRefusesTheOtherStoresTemplate(t *testing.T) {
	t.Parallel()
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	dynamo, err := samtemplate.Load("../../template.yaml")
	require.NoError(t, err)
	for fn, b := range postgresBuilders(cfg) {
		if fn == "MigrateFunction" {
			continue // template.yaml has none
		}
		require.ErrorContains(t, b(startup.NewEnvFrom(templateEnv(t, dynamo, fn))), "build it without the postgres tag", fn)
	}
	pg, err := samtemplate.Load("../../template-postgres.yaml")
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	for fn, b := range map[string]func(*startup.Env) error{
		"IntakeFunction":    func(e *startup.Env) error { _, err := Intake(e, cfg, log); return err },
		"RelayFunction":     func(e *startup.Env) error { _, err := Relay(e, cfg, log); return err },
		"WorkerFunction":    func(e *startup.Env) error { _, err := Worker(e, cfg, log); return err },
		"ProjectorFunction": func(e *startup.Env) error { _, err := Projector(e, cfg, log); return err },
		"SweeperFunction":   func(e *startup.Env) error { _, err := Sweeper(e, cfg, log); return err },
	} {
		require.ErrorContains(t, b(startup.NewEnvFrom(templateEnv(t, pg, fn))), "build it with the postgres tag", fn)
	}
}

// Each function of template-kafka-postgres.yaml but the relay (whose
// settings hold the template's conditions: kafkarelay's test) builds from
// exactly the settings it gives it, with the Kafka and PostgreSQL builders
// a bootstrap built with both tags runs (intake and the sweeper are the
// same on both transports), and a variable the template forgets is named.
func TestTheFunctionsBuildFromTheKafkaPostgresTemplatesEnvironment(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../template-kafka-postgres.yaml")
	require.NoError(t, err)
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	log := slog.New(slog.DiscardHandler)
	pg := postgresBuilders(cfg)
	for fn, build := range map[string]func(*startup.Env) error{
		"WorkerFunction":    func(e *startup.Env) error { _, err := WorkerKafkaPostgres(pgopen.Open)(e, cfg, log); return err },
		"ProjectorFunction": func(e *startup.Env) error { _, err := ProjectorKafkaPostgres(pgopen.Open)(e, cfg, log); return err },
		"IntakeFunction":    pg["IntakeFunction"],
		"SweeperFunction":   pg["SweeperFunction"],
		"MigrateFunction":   pg["MigrateFunction"],
	} {
		env := templateEnv(t, tpl, fn)
		require.Equal(t, startup.TransportKafka, env["TRANSPORT"], fn)
		require.NoError(t, build(startup.NewEnvFrom(env)), "%s with template-kafka-postgres.yaml's environment %v", fn, env)
		for k := range env {
			without := maps.Clone(env)
			delete(without, k)
			if err := build(startup.NewEnvFrom(without)); err != nil && k != "STORE" && k != "TRANSPORT" {
				require.ErrorContains(t, err, k+" is not set", fn)
			}
		}
		without := maps.Clone(env)
		delete(without, "STORE")
		require.ErrorContains(t, build(startup.NewEnvFrom(without)), `STORE: "dynamodb", but this bootstrap's wiring is PostgreSQL's`, fn)
	}
	// The SQS PostgreSQL consumers refuse the Kafka template, naming the tag.
	for _, fn := range []string{"WorkerFunction", "ProjectorFunction"} {
		require.ErrorContains(t, pg[fn](startup.NewEnvFrom(templateEnv(t, tpl, fn))), `TRANSPORT: "kafka", but this bootstrap's wiring is SQS's`, fn)
	}
}
