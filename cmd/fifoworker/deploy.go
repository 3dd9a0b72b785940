package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/fifoworker/fifoworker/internal/localdeploy"
	"github.com/fifoworker/fifoworker/internal/localstack"
	"github.com/fifoworker/fifoworker/internal/samtemplate"
)

// deploy creates the template's resources on the stack and prints its
// outputs as FIFOWORKER_* variables a shell can eval. It writes the
// stack's whole environment (stackEnv) to envFile too, for the operator's
// commands' --stack.
func deploy(ctx context.Context, s *localstack.State, templatePath, stackName, envFile string, stdout, stderr io.Writer) int {
	tpl, err := samtemplate.Load(templatePath)
	if err != nil {
		fmt.Fprintln(stderr, "fifoworker:", err)
		return 1
	}
	res, err := deployTemplate(ctx, s, tpl, templatePath, stackName, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "fifoworker:", err)
		return 1
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
	if err := localstack.WriteEnvFile(envFile, file.String()); err != nil {
		fmt.Fprintln(stderr, "fifoworker:", err)
		return 1
	}
	fmt.Fprintf(stderr, "localdeploy: the stack's environment is in %s: the operator's commands read it with --stack %s\n", envFile, s.Name)
	return 0
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
func deployTemplate(ctx context.Context, s *localstack.State, tpl *samtemplate.Template, templatePath, stackName string, stderr io.Writer) (*localdeploy.Result, error) {
	res, err := localdeploy.Deploy(ctx, tpl, stackName, s.Region, localdeploy.Clients{
		SQS: s.SQSClient(), DynamoDB: s.DynamoDBClient(), S3: s.S3Client(),
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "localdeploy: %d resources of %s deployed as stack %s\n", len(res.Resources), templatePath, stackName)
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
