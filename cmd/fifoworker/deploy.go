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
// outputs as FIFOWORKER_* variables a shell can eval.
func deploy(ctx context.Context, s *localstack.State, templatePath, stackName string, stdout, stderr io.Writer) int {
	tpl, err := samtemplate.Load(templatePath)
	if err != nil {
		fmt.Fprintln(stderr, "fifoworker:", err)
		return 1
	}
	res, err := localdeploy.Deploy(ctx, tpl, stackName, s.Region, localdeploy.Clients{
		SQS: s.SQSClient(), DynamoDB: s.DynamoDBClient(), S3: s.S3Client(),
	})
	if err != nil {
		fmt.Fprintln(stderr, "fifoworker:", err)
		return 1
	}
	fmt.Fprintf(stderr, "localdeploy: %d resources of %s deployed as stack %s\n", len(res.Resources), templatePath, stackName)
	for _, sk := range res.Skipped {
		fmt.Fprintln(stderr, "localdeploy: skipped:", sk)
	}
	names := make([]string, 0, len(res.Outputs))
	for name := range res.Outputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(stdout, "export %s='%s'\n", outputVar(name), res.Outputs[name])
	}
	return 0
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
