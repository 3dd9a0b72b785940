package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/demo"
)

// The demo runs on SQS (template.yaml) or Kafka (template-kafka.yaml);
// another transport is a usage error naming the flag, before any stack
// starts.
func TestDemoTakesSQSOrKafka(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "sqs", "kafka"} {
		require.NoError(t, (&demoOptions{Transport: ok}).Validate(), ok)
	}
	require.Equal(t, "template-kafka.yaml", demoTemplates["kafka"])
	require.Equal(t, "template.yaml", demoTemplates[""])
	for _, bad := range []string{"kinesis", "Kafka", "sqs,kafka"} {
		err := (&demoOptions{Transport: bad}).Validate()
		require.ErrorContains(t, err, "--transport", bad)
	}
}

// The demo's store is DynamoDB's (template.yaml, template-kafka.yaml) or
// PostgreSQL's (template-postgres.yaml on SQS); another store is a usage
// error naming the flag.
func TestDemoTakesDynamoDBOrPostgres(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "dynamodb", "postgres"} {
		require.NoError(t, (&demoOptions{Store: ok}).Validate(), ok)
	}
	require.Equal(t, "template-postgres.yaml", demoStores["postgres"][""])
	require.Equal(t, "template-postgres.yaml", demoStores["postgres"]["sqs"])
	require.Equal(t, "template-kafka.yaml", demoStores["dynamodb"]["kafka"])
	require.Equal(t, "template.yaml", demoStores[""][""])
	for _, bad := range []string{"aurora", "Postgres", "dynamodb,postgres"} {
		err := (&demoOptions{Store: bad}).Validate()
		require.ErrorContains(t, err, "--store", bad)
	}
}

// The demo ends with the console's hint for a newcomer, then the summary,
// which stays the last line (a script reads it). The demo stops its stack,
// so the hint names what starts one with the functions (make serve, which
// is `local serve`) and the console that finds it: each command it names
// is one the CLI has.
func TestTheDemoEndsWithTheConsolesHintBeforeTheSummary(t *testing.T) {
	t.Parallel()
	for _, ok := range []bool{true, false} {
		var out, errOut strings.Builder
		c := &cli{stdout: &out, stderr: &errOut}
		err := endDemo(c, demo.Summary{OK: ok}, nil)
		require.Equal(t, ok, err == nil)
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		require.GreaterOrEqual(t, len(lines), 2)
		var sum demo.Summary
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum), "the last line is the summary")
		require.Equal(t, ok, sum.OK)
		hint := strings.Join(lines[:len(lines)-1], "\n")
		require.Contains(t, hint, "make serve")
		require.Contains(t, hint, "go run ./cmd/fifoworker console")
	}
	for _, args := range demoHintCommands {
		c := &cli{env: newTestOps(t).env, stdout: io.Discard, stderr: io.Discard}
		_, err := c.parse(append(args, "--help"))
		require.NoError(t, err, args)
	}
	makefile, err := os.ReadFile("../../Makefile")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^serve:.*\n\tgo run ./cmd/fifoworker local serve$`, string(makefile), "make serve is local serve")
}
