//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// deployOps deploys template.yaml on the test run's stack as a stack of
// the test's own and removes it afterwards.
func deployOps(t *testing.T) *localdeploy.Result {
	t.Helper()
	_, deployed, _ := deployTest(t, "ops")
	return deployed
}

// deployTest deploys template.yaml on the test run's stack as a stack of
// the test's own (its name begins with prefix), removed afterwards: the
// template, what was deployed and the stack's name.
func deployTest(t *testing.T, prefix string) (*samtemplate.Template, *localdeploy.Result, string) {
	t.Helper()
	state := testenv.Stack(t)
	tpl, err := samtemplate.Load("../../template.yaml")
	require.NoError(t, err)
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client()}
	stack := awstest.Name(t, prefix)
	deployed, err := localdeploy.Deploy(context.Background(), tpl, stack, state.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	return tpl, deployed, stack
}

// outputsEnv is the environment `eval "$(fifoworker local deploy)"` gives:
// the deployment's outputs as FIFOWORKER_* variables, the AWS
// configuration the process has (the stack's endpoints), stdin.
func outputsEnv(deployed *localdeploy.Result, stdin string) opsEnv {
	vars := map[string]string{}
	for name, v := range deployed.Outputs {
		vars[outputVar(name)] = v
	}
	env := defaultOpsEnv()
	env.getenv = func(k string) string { return vars[k] }
	env.stdin = strings.NewReader(stdin)
	return env
}

// runCLI runs the CLI: with env when it is given, else as main does.
func runCLI(t *testing.T, env *opsEnv, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if env == nil {
		code = run(args, &out, &errOut)
	} else {
		code = runWith(args, *env, &out, &errOut)
	}
	t.Logf("fifoworker %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

func listedIDs(t *testing.T, out string) []string {
	t.Helper()
	var got struct {
		Jobs []jobJSON `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	var ids []string
	for _, j := range got.Jobs {
		ids = append(ids, j.ID+":"+j.Status)
	}
	return ids
}

// jobs get, list and cancel, through run() with --table, on the deployed
// Jobs table; a missing job and a missing table are errors that say so.
func TestOpsJobsOnADeployedTable(t *testing.T) {
	t.Parallel()
	deployed := deployOps(t)
	table := deployed.Outputs["JobsTableName"]
	require.NotEmpty(t, table)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: awstest.DynamoDB(t), Table: table})
	require.NoError(t, err)
	ctx := context.Background()
	tenant := awstest.Name(t, "tenant")
	created, err := store.Create(ctx, jobs.CreateRequest{IntentID: "intent-1", Tenant: tenant, Spec: map[string]string{"format": "ndjson"}})
	require.NoError(t, err)
	id := created.Job.ID
	other, err := store.Create(ctx, jobs.CreateRequest{IntentID: "intent-1", Tenant: tenant + "-other"})
	require.NoError(t, err)

	code, out, _ := runCLI(t, nil, "jobs", "get", id, "--table", table)
	require.Equal(t, 0, code)
	require.Regexp(t, line("job", id), out)
	require.Regexp(t, line("tenant", tenant), out)
	require.Regexp(t, line("status", "pending"), out)
	require.Regexp(t, line("generation", "0"), out)
	require.Regexp(t, line("version", "0"), out)
	require.Regexp(t, line("lease", "none (never claimed)"), out)
	require.Regexp(t, line("last message", "job.run "+id+"/v0"), out)

	// The live index is read for the listing; it may lag a write.
	require.Eventually(t, func() bool {
		code, out, _ := runCLI(t, nil, "jobs", "list", "--table", table, "--tenant", tenant, "--json")
		return code == 0 && strings.Join(listedIDs(t, out), ",") == id+":pending"
	}, 30*time.Second, 100*time.Millisecond, "the tenant's job is listed, the other tenant's is not")
	code, out, _ = runCLI(t, nil, "jobs", "list", "--table", table)
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^`+regexp.QuoteMeta(id)+`\s+`+regexp.QuoteMeta(tenant)+`\s+pending\s+0\s+0\s+0\s`, out)
	require.Contains(t, out, other.Job.ID)

	code, _, errOut := runCLI(t, nil, "jobs", "cancel", id, "--tenant", tenant+"-other", "--table", table)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, fmt.Sprintf("job %s belongs to tenant %q, not %q: nothing cancelled", id, tenant, tenant+"-other"))
	j, err := store.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusPending, j.Status)

	code, out, _ = runCLI(t, nil, "jobs", "cancel", id, "--tenant", tenant, "--table", table, "--reason", "ops test")
	require.Equal(t, 0, code)
	require.Equal(t, fmt.Sprintf("job %s cancelled: version 0 → 1, generation 0 → 1\n", id), out)
	j, err = store.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCancelled, j.Status)
	require.Equal(t, int64(1), j.Version)
	require.Equal(t, "ops test", j.Error.Message)

	code, out, _ = runCLI(t, nil, "jobs", "get", id, "--table", table, "--json")
	require.Equal(t, 0, code)
	var got jobJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "cancelled", got.Status)
	require.Equal(t, int64(1), got.Version)
	require.Equal(t, &failureJSON{Code: jobs.CodeCancelled, Message: "ops test"}, got.Error)
	require.NotNil(t, got.ExpiresAt)

	require.Eventually(t, func() bool {
		code, live, _ := runCLI(t, nil, "jobs", "list", "--table", table, "--tenant", tenant, "--live", "--json")
		code2, all, _ := runCLI(t, nil, "jobs", "list", "--table", table, "--tenant", tenant, "--json")
		return code == 0 && code2 == 0 && len(listedIDs(t, live)) == 0 && strings.Join(listedIDs(t, all), ",") == id+":cancelled"
	}, 30*time.Second, 100*time.Millisecond, "the cancelled job leaves the live listing and is listed as final")

	code, out, errOut = runCLI(t, nil, "jobs", "get", "job-missing", "--table", table)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, "fifoworker jobs get: job job-missing not found in table "+table+"\n", errOut)

	code, out, errOut = runCLI(t, nil, "jobs", "get", id, "--table", table+"-nope")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "fifoworker jobs get: table "+table+"-nope: it does not exist (check --table")
}

// receive takes n messages from the queue, in the order SQS gives them.
func receive(t *testing.T, client *sqs.Client, url string, n int) []sqstypes.Message {
	t.Helper()
	var got []sqstypes.Message
	require.Eventually(t, func() bool {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		for _, m := range out.Messages {
			got = append(got, m)
			_, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
		return len(got) >= n
	}, 30*time.Second, 10*time.Millisecond)
	require.Len(t, got, n)
	return got
}

func archives(t *testing.T, client *s3.Client, bucket string) []string {
	t.Helper()
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("quarantine-archive/")})
	require.NoError(t, err)
	keys := []string{}
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// quarantine list, show, redrive and discard on the deployed quarantine
// table, the commands queue and the bucket, named by the FIFOWORKER_*
// variables: two messages parked by pkg/quarantine as the worker parks
// them are listed and shown in order, a discard that is not confirmed
// changes nothing, the redrive sends them back in order under their
// redrive deduplication ids, and discard --yes archives them in the
// bucket and releases the group. A wrong table, queue or group is an exit
// 1 that says which.
func TestOpsQuarantineOnADeployedStack(t *testing.T) {
	t.Parallel()
	deployed := deployOps(t)
	table := deployed.Outputs["QuarantineTableName"]
	require.NotEmpty(t, table, "template.yaml's QuarantineTableName output")
	queueURL := deployed.Outputs["CommandsQueueUrl"]
	bucket := deployed.Outputs["CandidatesBucketName"]
	queueName, err := quarantine.QueueName(queueURL)
	require.NoError(t, err)
	ctx := context.Background()
	qstore, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: awstest.DynamoDB(t), Table: table})
	require.NoError(t, err)
	q, err := quarantine.New(quarantine.Config{Store: qstore, QueueARN: deployed.Attributes["CommandsQueue"]["Arn"]})
	require.NoError(t, err)
	group := awstest.Name(t, "g")
	seqs := []string{"18888000000000000001", "18888000000000000002"}
	var msgs []*events.SQSMessage
	for i, s := range seqs {
		msgs = append(msgs, &events.SQSMessage{
			MessageId: fmt.Sprintf("m-%d", i), Body: fmt.Sprintf(`{"job_id":"job-%d"}`, i),
			Attributes: map[string]string{"SequenceNumber": s, "MessageGroupId": group, "MessageDeduplicationId": fmt.Sprintf("d-%d", i), "ApproximateReceiveCount": "1"},
		})
	}
	_, err = q.Park(ctx, group, msgs, errors.New("handler: permanent: bad command"), true)
	require.NoError(t, err)

	env := outputsEnv(deployed, "")
	require.Eventually(t, func() bool {
		code, out, _ := runCLI(t, &env, "quarantine", "list", "--json")
		var got struct {
			Queue string     `json:"queue"`
			Holds []holdJSON `json:"holds"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		return code == 0 && got.Queue == queueName && len(got.Holds) == 1 && got.Holds[0].Group == group && got.Holds[0].Parked == 2 &&
			got.Holds[0].State == "held" && got.Holds[0].From == seqs[0] && got.Holds[0].Through == seqs[1]
	}, 30*time.Second, 100*time.Millisecond, "the held index lists the group")

	code, out, _ := runCLI(t, &env, "quarantine", "show", group, "--json")
	require.Equal(t, 0, code)
	var shown struct {
		Hold     holdJSON     `json:"hold"`
		Messages []parkedJSON `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown), out)
	require.Equal(t, "handler: permanent: bad command", shown.Hold.Cause)
	require.Len(t, shown.Messages, 2)
	for i, m := range shown.Messages {
		require.Equal(t, seqs[i], m.Sequence)
		require.Equal(t, msgs[i].Body, m.Body)
		require.Equal(t, "parked", m.Status)
	}

	s3c := awstest.S3(t)
	notConfirmed := outputsEnv(deployed, "no\n")
	code, out, errOut := runCLI(t, &notConfirmed, "quarantine", "discard", group)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "not confirmed: nothing discarded")
	h, err := qstore.Hold(ctx, queueName, group)
	require.NoError(t, err)
	require.Equal(t, int64(2), h.Parked, "nothing discarded")
	require.Empty(t, archives(t, s3c, bucket), "nothing archived")

	code, out, _ = runCLI(t, &env, "quarantine", "redrive", group, "--no-wait")
	require.Equal(t, 0, code)
	require.Equal(t, fmt.Sprintf("group %s: 2 sent under epoch 1; now draining, 2 parked\n", group), out)
	sqsc := awstest.SQS(t)
	copies := receive(t, sqsc, queueURL, 2)
	for i, m := range copies {
		key, err := quarantine.SeqKey(seqs[i])
		require.NoError(t, err)
		require.Equal(t, msgs[i].Body, aws.ToString(m.Body), "copy %d in order", i)
		require.Equal(t, group, m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)])
		nonce := parkedNonce(t, qstore, queueName, group, key)
		require.Equal(t, quarantine.Copy{Epoch: 1, Nonce: nonce, Sequence: key}.DeduplicationID(), m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageDeduplicationId)])
	}

	// While the group drains, a copy past its check could be running: the
	// discard is refused and nothing is archived.
	code, _, errOut = runCLI(t, &env, "quarantine", "discard", group, "--yes", "--json")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "is draining under epoch 1")
	require.Empty(t, archives(t, s3c, bucket), "nothing archived")
	// A copy fails again: the worker holds the group again, as it would.
	_, err = q.Park(ctx, group, nil, errors.New("handler: permanent: still bad"), true)
	require.NoError(t, err)

	code, out, _ = runCLI(t, &env, "quarantine", "discard", group, "--yes", "--json")
	require.Equal(t, 0, code)
	var discarded struct {
		Discarded int      `json:"discarded"`
		Archives  []string `json:"archives"`
		State     string   `json:"state"`
		Parked    int64    `json:"parked"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &discarded), out)
	require.Equal(t, 2, discarded.Discarded)
	require.Equal(t, "released", discarded.State)
	require.Equal(t, int64(0), discarded.Parked)
	require.ElementsMatch(t, discarded.Archives, archives(t, s3c, bucket))
	for i, key := range discarded.Archives {
		obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		require.NoError(t, err)
		doc, err := io.ReadAll(obj.Body)
		require.NoError(t, obj.Body.Close())
		require.NoError(t, err)
		var a struct {
			Body           string `json:"Body"`
			SequenceNumber string `json:"sequence_number"`
		}
		require.NoError(t, json.Unmarshal(doc, &a), "%s", doc)
		require.Equal(t, msgs[i].Body, a.Body)
		require.Equal(t, seqs[i], a.SequenceNumber)
	}
	require.Eventually(t, func() bool {
		code, out, _ := runCLI(t, &env, "quarantine", "list")
		return code == 0 && out == "no group of "+queueName+" is held\n"
	}, 30*time.Second, 100*time.Millisecond, "the released group leaves the list")

	// Wrong names, each through run() with flags.
	code, out, errOut = runCLI(t, nil, "quarantine", "list", "--queue-url", queueURL, "--table", table+"-nope")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "table "+table+"-nope: it does not exist (check --table")
	wrongQueue := strings.TrimSuffix(queueURL, queueName) + "nope-" + queueName
	code, out, errOut = runCLI(t, nil, "quarantine", "show", group, "--queue-url", wrongQueue, "--table", table)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "queue "+wrongQueue+": it does not exist (check --queue-url)")
	code, out, errOut = runCLI(t, nil, "quarantine", "show", "g-nope", "--queue-url", queueURL, "--table", table)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, fmt.Sprintf(`group "g-nope" is not held on %s`, queueName))
	code, _, errOut = runCLI(t, nil, "quarantine", "discard", group, "--yes", "--queue-url", queueURL, "--table", table, "--bucket", bucket+"-nope")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "bucket "+bucket+"-nope: it does not exist (check --bucket)")
}

func objectExists(t *testing.T, client *s3.Client, bucket, key string) bool {
	t.Helper()
	_, err := client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	var nf *s3types.NotFound
	if errors.As(err, &nf) {
		return false
	}
	require.NoError(t, err)
	return true
}

// sweep runs the function's sweeper on the deployment named by the
// FIFOWORKER_* variables: a dry run reports the stuck job and the orphan
// candidate and changes nothing (the job, the candidate, the cursors);
// the real run nudges and deletes them.
func TestOpsSweepOnADeployedStack(t *testing.T) {
	t.Parallel()
	deployed := deployOps(t)
	ctx := context.Background()
	table, bucket := deployed.Outputs["JobsTableName"], deployed.Outputs["CandidatesBucketName"]
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: awstest.DynamoDB(t), Table: table})
	require.NoError(t, err)
	created, err := store.Create(ctx, jobs.CreateRequest{IntentID: "stuck", Tenant: "t-1"})
	require.NoError(t, err)
	s3c := awstest.S3(t)
	orphan, err := candidate.NewKey("job-gone", 1, "att-1", "ndjson")
	require.NoError(t, err)
	cands, err := candidate.New(candidate.Config{Client: s3c, Bucket: bucket})
	require.NoError(t, err)
	_, err = cands.Put(ctx, orphan, strings.NewReader("{}\n"))
	require.NoError(t, err)

	env := outputsEnv(deployed, "")
	fast := []string{"--grace", "1s", "--stuck-after", "1s"}
	var rep sweeper.Report
	require.Eventually(t, func() bool {
		code, out, _ := runCLI(t, &env, append([]string{"sweep", "--dry-run", "--json"}, fast...)...)
		rep = sweeper.Report{}
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		return code == 0 && rep.WouldNudge == 1 && rep.WouldDelete == 1
	}, 30*time.Second, 200*time.Millisecond, "once both are older than a second, a dry run would nudge the job and delete the candidate")
	require.True(t, rep.DryRun)
	require.Zero(t, rep.Nudged+rep.Deleted+rep.Repaired+rep.Errors)

	code, out, _ := runCLI(t, &env, append([]string{"sweep", "--dry-run"}, fast...)...)
	require.Equal(t, 0, code)
	require.Contains(t, out, "dry run on table "+table+" and bucket "+bucket+": nothing was changed")
	require.Regexp(t, line("stuck jobs", "1 listed: 1 would be nudged, 0 refused (the job moved on)"), out)

	j, err := store.Get(ctx, created.Job.ID)
	require.NoError(t, err)
	require.Equal(t, created.Job, j, "the dry runs left the job alone")
	require.True(t, objectExists(t, s3c, bucket, orphan.String()), "and the candidate")
	require.False(t, objectExists(t, s3c, bucket, sweeper.CursorKey), "and wrote no cursor")
	require.False(t, objectExists(t, s3c, bucket, sweeper.RepairCursorKey))

	code, out, _ = runCLI(t, &env, append([]string{"sweep", "--json"}, fast...)...)
	require.Equal(t, 0, code)
	rep = sweeper.Report{}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.False(t, rep.DryRun)
	require.Equal(t, 1, rep.Nudged)
	require.Equal(t, 1, rep.Deleted)
	j, err = store.Get(ctx, created.Job.ID)
	require.NoError(t, err)
	require.Equal(t, created.Job.Version+1, j.Version, "nudged")
	require.False(t, objectExists(t, s3c, bucket, orphan.String()), "deleted")

	code, out, errOut := runCLI(t, &env, "sweep", "--jobs-table", table+"-nope")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "table "+table+"-nope: it does not exist (check --jobs-table")
	code, _, errOut = runCLI(t, &env, "sweep", "--bucket", bucket+"-nope")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "bucket "+bucket+"-nope: it does not exist (check --bucket)")
}
