//go:build integration

package lambdawire

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The wired sweeper, on the template's tables and bucket: a stuck job
// whose commands group is held is left alone and counted as held, and the
// run reports the held groups of both queues as the gauge the held-groups
// alarms watch (1 for the commands queue, 0, not nothing, for the events
// queue) and 0 unmeasured gauges.
func TestTheWiredSweeperLeavesHeldJobsAndReportsHeldGroups(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	db := DynamoDB(cfg)
	res := deployTemplateResources(t, cfg, db, "held", "JobsTable", "ViewsTable", "TotalsTable", "QuarantineTable", "CandidatesBucket")

	// Two jobs created an hour ago, never claimed: both stuck.
	hourAgo := func() time.Time { return time.Now().Add(-time.Hour) }
	past, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: db, Table: res["JobsTable"], Config: jobs.Config{Now: hourAgo}})
	require.NoError(t, err)
	for _, id := range []string{"job-held", "job-free"} {
		_, err := past.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
		require.NoError(t, err)
	}
	commands := "arn:aws:sqs:eu-west-1:123456789012:" + awstest.Name(t, "c") + ".fifo"
	evts := "arn:aws:sqs:eu-west-1:123456789012:" + awstest.Name(t, "e") + ".fifo"
	holds, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: db, Table: res["QuarantineTable"]})
	require.NoError(t, err)
	q, err := quarantine.New(quarantine.Config{Store: holds, QueueARN: commands})
	require.NoError(t, err)
	msg := events.SQSMessage{MessageId: "m1", Body: "x", EventSourceARN: commands,
		Attributes: map[string]string{"MessageGroupId": "job-held", "SequenceNumber": "1001"}}
	_, err = q.Park(t.Context(), "job-held", []*events.SQSMessage{&msg}, errors.New("boom"), true)
	require.NoError(t, err)

	var buf testenv.Buffer
	run, err := Sweeper(startup.NewEnvFrom(map[string]string{
		"JOBS_TABLE": res["JobsTable"], "CANDIDATES_BUCKET": res["CandidatesBucket"],
		"VIEWS_TABLE": res["ViewsTable"], "TOTALS_TABLE": res["TotalsTable"],
		"QUARANTINE_TABLE": res["QuarantineTable"], "COMMANDS_QUEUE_ARN": commands, "EVENTS_QUEUE_ARN": evts,
		"AWS_LAMBDA_FUNCTION_NAME": "stack-sweeper",
	}), cfg, slog.New(slog.NewJSONHandler(&buf, nil)))
	require.NoError(t, err)
	rep, err := run(t.Context(), sweeper.Options{})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Stuck)
	require.Equal(t, 1, rep.Nudged)
	require.Equal(t, 1, rep.Held)
	held, err := past.Get(t.Context(), "job-held")
	require.NoError(t, err)
	require.Zero(t, held.Version, "not nudged")

	got := map[string]float64{}
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if _, ok := rec["_aws"]; !ok {
			continue
		}
		if queue, ok := rec["Queue"].(string); ok {
			got[queue] = rec[quarantine.MetricHeldGroups].(float64)
			continue
		}
		got[sweeper.MetricUnmeasured] = rec[sweeper.MetricUnmeasured].(float64)
	}
	cname, _ := quarantine.QueueName(commands)
	ename, _ := quarantine.QueueName(evts)
	require.Equal(t, map[string]float64{cname: 1, ename: 0, sweeper.MetricUnmeasured: 0}, got)
}

// deployTemplateResources deploys template.yaml's resources named on the
// local stack (cfg, db), named after prefix, torn down when t ends, and
// returns their physical names.
func deployTemplateResources(t *testing.T, cfg aws.Config, db *dynamodb.Client, prefix string, names ...string) map[string]string {
	t.Helper()
	tpl, err := samtemplate.Load("../../template.yaml")
	require.NoError(t, err)
	only := &samtemplate.Template{Parameters: tpl.Parameters, Conditions: tpl.Conditions, Mappings: tpl.Mappings,
		Resources: map[string]samtemplate.Resource{}}
	for _, name := range names {
		only.Resources[name] = tpl.Resources[name]
	}
	clients := localdeploy.Clients{DynamoDB: db, S3: S3(cfg)}
	deployed, err := localdeploy.Deploy(t.Context(), only, awstest.Name(t, prefix), cfg.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	return deployed.Resources
}
