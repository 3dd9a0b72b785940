package lambdawire

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// templateEnv is the environment template.yaml gives a function (Globals
// and its own): literals as written, a parameter's default for a Ref to a
// parameter, and a stand-in value for a Ref or GetAtt of a resource.
func templateEnv(t *testing.T, tpl *samtemplate.Template, logical string) map[string]string {
	t.Helper()
	env := map[string]string{}
	globals, _ := tpl.Globals["Function"].(map[string]any)
	for _, e := range []any{globals["Environment"], tpl.Resources[logical].Properties["Environment"]} {
		m, _ := e.(map[string]any)
		vars, _ := m["Variables"].(map[string]any)
		for k, v := range vars {
			switch x := v.(type) {
			case map[string]any:
				ref, _ := x["Ref"].(string)
				att, _ := x["Fn::GetAtt"].([]any)
				switch p, ok := tpl.Parameters[ref]; {
				case ok:
					env[k] = fmt.Sprint(p.Default)
				case len(att) == 2 && att[1] == "Arn":
					env[k] = standInARN(tpl, fmt.Sprint(att[0]))
				case len(att) == 2:
					env[k] = fmt.Sprintf("stack-%s-%s", att[0], att[1])
				default:
					env[k] = standIn(tpl, ref)
				}
			default:
				env[k] = fmt.Sprint(x)
			}
		}
	}
	return env
}

// standIn is what a Ref to resource name resolves to when deployed: a
// queue's URL (ending in .fifo for a FIFO queue), a table's or bucket's name.
func standIn(tpl *samtemplate.Template, name string) string {
	r := tpl.Resources[name]
	if r.Type == "AWS::SQS::Queue" {
		url := "https://sqs.eu-west-1.amazonaws.com/123456789012/stack-" + name
		if r.Properties["FifoQueue"] == true {
			url += ".fifo"
		}
		return url
	}
	return "stack-" + name
}

// standInARN is what a GetAtt of resource name's Arn resolves to.
func standInARN(tpl *samtemplate.Template, name string) string {
	r := tpl.Resources[name]
	if r.Type == "AWS::SQS::Queue" {
		arn := "arn:aws:sqs:eu-west-1:123456789012:stack-" + name
		if r.Properties["FifoQueue"] == true {
			arn += ".fifo"
		}
		return arn
	}
	return "arn:aws:service:eu-west-1:123456789012:stack-" + name
}

// Every function builds from exactly the settings template.yaml gives it: a
// variable the template forgets, or a value its builder refuses, fails here
// rather than at a deployed function's init.
func TestEveryFunctionBuildsFromTheTemplatesEnvironment(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../template.yaml")
	require.NoError(t, err)
	cfg := aws.Config{Region: "eu-west-1"}
	log := slog.New(slog.DiscardHandler)
	build := map[string]func(*startup.Env) error{
		"IntakeFunction":    func(e *startup.Env) error { _, err := Intake(e, cfg, log); return err },
		"RelayFunction":     func(e *startup.Env) error { _, err := Relay(e, cfg, log); return err },
		"WorkerFunction":    func(e *startup.Env) error { _, err := Worker(e, cfg, log); return err },
		"ProjectorFunction": func(e *startup.Env) error { _, err := Projector(e, cfg, log); return err },
		"SweeperFunction":   func(e *startup.Env) error { _, err := Sweeper(e, cfg, log); return err },
	}
	require.ElementsMatch(t, tpl.OfType("AWS::Serverless::Function"), func() []string {
		var names []string
		for n := range build {
			names = append(names, n)
		}
		return names
	}(), "a builder for every function of the template")
	for fn, b := range build {
		env := templateEnv(t, tpl, fn)
		require.NoError(t, b(startup.NewEnvFrom(env)), "%s with the template's environment %v", fn, env)
		// The check can fail: without any one of its variables, a function
		// whose builder requires it does not build.
		for k := range env {
			without := map[string]string{}
			for k2, v := range env {
				if k2 != k {
					without[k2] = v
				}
			}
			if err := b(startup.NewEnvFrom(without)); err != nil {
				require.ErrorContains(t, err, k+" is not set", fn)
			}
		}
	}
	// And a variable the worker needs, removed from the template, is caught.
	worker := templateEnv(t, tpl, "WorkerFunction")
	delete(worker, "ARTICLES_TABLE")
	require.ErrorContains(t, build["WorkerFunction"](startup.NewEnvFrom(worker)), "ARTICLES_TABLE is not set")
}
