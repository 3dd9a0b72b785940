package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// deploy creates the template's resources on the stack and prints its
// outputs as FIFOWORKER_* variables a shell can eval. It writes the
// stack's whole environment (stackEnv) to envFile too, for the operator's
// commands' --stack.
func deploy(ctx context.Context, s *localstack.State, d deployFlags, envFile string, stdout, stderr io.Writer) error {
	tpl, err := samtemplate.Load(d.Template)
	if err != nil {
		return err
	}
	res, err := deployTemplate(ctx, s, tpl, d, stderr)
	if err != nil {
		return err
	}
	var file strings.Builder
	for _, kv := range stackEnv(s, res.Outputs) {
		k, v, _ := strings.Cut(kv, "=")
		line := localstack.ShellExport(k, v) + "\n"
		file.WriteString(line)
		if strings.HasPrefix(k, "FIFOWORKER_") && k != "FIFOWORKER_STACK" && k != "FIFOWORKER_RIE" {
			fmt.Fprint(stdout, line)
		}
	}
	return writeDeployEnv(envFile, file.String(), s.Name, stderr)
}

// writeDeployEnv writes text, deploy's environment of stack name, to its
// env file envFile, unless the file is that of a `local serve` still
// running on the stack: serve's holds FIFOWORKER_API_URL and the tokens,
// which deploy does not know, so it is kept (the deployment's outputs are
// the same names serve deployed, and deploy prints them on stdout).
func writeDeployEnv(envFile, text, name string, stderr io.Writer) error {
	if api := servingAPI(envFile); api != "" {
		fmt.Fprintf(stderr, "localdeploy: %s is the env file of the `local serve` running on stack %s (its API listens at %s): kept, with its tokens and FIFOWORKER_API_URL\n", envFile, name, api)
		return nil
	}
	if err := localstack.WriteEnvFile(envFile, text); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "localdeploy: the stack's environment is in %s: the operator's commands read it with --stack %s\n", envFile, name)
	return nil
}

// servingAPI is the API's URL in env file envFile (FIFOWORKER_API_URL,
// which only `local serve` writes) if something listens at it, else "": a
// serve that was killed left its file, and deploy may replace it.
func servingAPI(envFile string) string {
	vars, err := localstack.ReadEnvFile(envFile)
	if err != nil {
		return ""
	}
	u, err := url.Parse(vars["FIFOWORKER_API_URL"])
	if err != nil || u.Host == "" {
		return ""
	}
	c, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err != nil {
		return ""
	}
	_ = c.Close()
	return u.String()
}

// stackEnv is the environment of a deployed local stack, as KEY=VALUE in
// a stable order: the stack's endpoints, region and credentials
// (localstack's State.Env) and the deployment's outputs as FIFOWORKER_*
// variables (outputVar).
func stackEnv(s *localstack.State, outputs map[string]string) []string {
	env := s.Env()
	for name, v := range outputs {
		env = append(env, outputVar(name)+"="+v)
	}
	sort.Strings(env)
	return env
}

// deployTemplate deploys tpl and reports what was made and, grouped by
// reason, what the emulators do not do.
func deployTemplate(ctx context.Context, s *localstack.State, tpl *samtemplate.Template, d deployFlags, stderr io.Writer) (*localdeploy.Result, error) {
	clients := localdeploy.Clients{SQS: s.SQSClient(), DynamoDB: s.DynamoDBClient(), S3: s.S3Client(), KafkaBootstrapServers: s.Kafka}
	if pipeline.TemplateStore(tpl) == pipeline.StorePostgres {
		// The schema goes to the stack's PostgreSQL, opened as the
		// functions open it.
		env := startup.NewEnvFrom(map[string]string{pgopen.DSNVar: s.Postgres})
		clients.Postgres = pgopen.Open(env, aws.Config{})
		if err := env.Err(); err != nil {
			return nil, fmt.Errorf("the stack's PostgreSQL: %w", err)
		}
		defer func() { _ = clients.Postgres.Close() }()
	}
	res, err := localdeploy.Deploy(ctx, tpl, d.StackName, s.Region, clients)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "localdeploy: %d resources of %s deployed as stack %s\n", len(res.Resources), d.Template, d.StackName)
	byReason := map[string][]string{}
	var reasons []string
	for _, sk := range res.Skipped {
		what, reason, ok := strings.Cut(sk, "): ")
		switch {
		case ok:
			what += ")"
		case strings.HasPrefix(sk, "output "):
			what, reason, _ = strings.Cut(sk, ": ")
		default:
			what, reason = sk, "skipped"
		}
		if byReason[reason] == nil {
			reasons = append(reasons, reason)
		}
		byReason[reason] = append(byReason[reason], what)
	}
	for _, r := range reasons {
		fmt.Fprintf(stderr, "localdeploy: skipped (%s): %s\n", r, strings.Join(byReason[r], ", "))
	}
	return res, nil
}

var (
	acronymEnd = regexp.MustCompile(`([A-Z]+)([A-Z][a-z])`)
	wordStart  = regexp.MustCompile(`([a-z0-9])([A-Z])`)
)

// outputVar names an output's variable:
// CommandsDLQUrl -> FIFOWORKER_COMMANDS_DLQ_URL.
func outputVar(output string) string {
	s := acronymEnd.ReplaceAllString(output, "${1}_${2}")
	return "FIFOWORKER_" + strings.ToUpper(wordStart.ReplaceAllString(s, "${1}_${2}"))
}
