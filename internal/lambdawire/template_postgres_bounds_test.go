package lambdawire

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// Every value CloudFormation lets a deployer give a number parameter of a
// PostgreSQL template that a function reads (its MinValue and its
// MaxValue) is one the function's builder accepts: a wider parameter
// deploys a stack whose functions all fail their init. But the worker's
// EPHEMERAL_STORAGE_MB and MAX_CANDIDATE_BYTES, whose bound is a joint one
// (ten candidates in 90% of the storage) that MaxCandidateBytes's
// description states and the worker checks at its cold start, as on
// template.yaml.
func TestThePostgresTemplatesNumberParametersAreWithinTheBuildersBounds(t *testing.T) {
	t.Parallel()
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	log := slog.New(slog.DiscardHandler)
	pg := postgresBuilders(cfg)
	kafkaPg := map[string]func(*startup.Env) error{
		"WorkerFunction":    func(e *startup.Env) error { _, err := WorkerKafkaPostgres(pgopen.Open)(e, cfg, log); return err },
		"ProjectorFunction": func(e *startup.Env) error { _, err := ProjectorKafkaPostgres(pgopen.Open)(e, cfg, log); return err },
		"IntakeFunction":    pg["IntakeFunction"],
		"SweeperFunction":   pg["SweeperFunction"],
		"MigrateFunction":   pg["MigrateFunction"],
	}
	for file, builders := range map[string]map[string]func(*startup.Env) error{
		"../../template-postgres.yaml": pg, "../../template-kafka-postgres.yaml": kafkaPg,
	} {
		tpl, err := samtemplate.Load(file)
		require.NoError(t, err)
		checked := 0
		for fn, build := range builders {
			vars := functionVariables(tpl, fn)
			env := templateEnv(t, tpl, fn)
			for name, param := range numberParameters(tpl, vars) {
				if name == "EPHEMERAL_STORAGE_MB" || name == "MAX_CANDIDATE_BYTES" {
					continue
				}
				for _, v := range []any{param.MinValue, param.MaxValue} {
					if v == nil {
						continue
					}
					with := map[string]string{}
					for k, x := range env {
						with[k] = x
					}
					with[name] = fmt.Sprint(v)
					require.NoError(t, build(startup.NewEnvFrom(with)), "%s %s: %s=%v, a value the parameter allows", file, fn, name, v)
					checked++
				}
			}
		}
		require.NotZero(t, checked, file)
	}
}

// functionVariables are the variables of fn's environment, the Globals'
// and its own, as written in the template.
func functionVariables(tpl *samtemplate.Template, fn string) map[string]any {
	out := map[string]any{}
	globals, _ := tpl.Globals["Function"].(map[string]any)
	for _, e := range []any{globals["Environment"], tpl.Resources[fn].Properties["Environment"]} {
		m, _ := e.(map[string]any)
		vars, _ := m["Variables"].(map[string]any)
		for k, v := range vars {
			out[k] = v
		}
	}
	return out
}

// numberParameters are the variables of vars that are a Ref to a Number
// parameter, with that parameter.
func numberParameters(tpl *samtemplate.Template, vars map[string]any) map[string]samtemplate.Parameter {
	out := map[string]samtemplate.Parameter{}
	for k, v := range vars {
		m, _ := v.(map[string]any)
		ref, _ := m["Ref"].(string)
		if p, ok := tpl.Parameters[ref]; ok && p.Type == "Number" {
			out[k] = p
		}
	}
	return out
}
