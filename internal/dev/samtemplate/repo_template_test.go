package samtemplate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The checks below hold the repository's template.yaml to the rules in
// docs/ARCHITECTURE.md and to AWS's own constraints; they run in make test.

// repoTemplate is template.yaml, parsed once; tests only read it.
var repoTemplate, repoTemplateErr = samtemplate.Load("../../../template.yaml")

func loadRepoTemplate(t *testing.T) *samtemplate.Template {
	t.Helper()
	require.NoError(t, repoTemplateErr)
	return repoTemplate
}

func asInt(t *testing.T, v any) int {
	t.Helper()
	if _, ok := v.(map[string]any); ok { // a parameter or a mapping's value: with the defaults
		s, err := repoTemplate.Scalar(v, deployedWith(repoTemplate, nil))
		require.NoError(t, err)
		return asInt(t, s)
	}
	switch n := v.(type) {
	case int:
		return n
	case string:
		var i int
		for _, c := range n {
			require.True(t, c >= '0' && c <= '9', "not a number: %q", n)
			i = i*10 + int(c-'0')
		}
		return i
	}
	t.Fatalf("not a number: %#v", v)
	return 0
}

func getAttTarget(v any) string {
	m, _ := v.(map[string]any)
	ga, _ := m["Fn::GetAtt"].([]any)
	if len(ga) != 2 {
		return ""
	}
	name, _ := ga[0].(string)
	return name
}

func TestTemplateQueuesAreConsistentlyFIFOWithFIFODeadLetterQueues(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	queues := tpl.OfType("AWS::SQS::Queue")
	require.NotEmpty(t, queues)
	for _, name := range queues {
		p := tpl.Resources[name].Properties
		isFIFO := p["FifoQueue"] == true
		qn, _ := p["QueueName"].(map[string]any)["Fn::Sub"].(string)
		require.Equal(t, isFIFO, strings.HasSuffix(qn, ".fifo"), "%s: a FIFO queue's name ends in .fifo, and only then", name)
		rp, ok := p["RedrivePolicy"].(map[string]any)
		if !ok {
			continue
		}
		dlq := getAttTarget(rp["deadLetterTargetArn"])
		require.Contains(t, tpl.Resources, dlq, "%s: redrive target must be a queue of this template", name)
		require.Equal(t, isFIFO, tpl.Resources[dlq].Properties["FifoQueue"] == true,
			"%s: the dead-letter queue of a FIFO queue must be FIFO (and of a standard queue, standard)", name)
		require.GreaterOrEqual(t, asInt(t, rp["maxReceiveCount"]), 1, name)
		if isFIFO {
			require.Equal(t, false, p["ContentBasedDeduplication"], "%s: dedup ids are command/event ids, never the body", name)
		}
	}
}

// AWS: an SQS event source's visibility timeout should be at least six
// times the function's timeout. Checked for every function with an SQS
// event, and for the commands queue against the Globals timeout the worker
// will inherit.
func TestTemplateVisibilityIsSixTimesTheFunctionTimeout(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	fn, _ := tpl.Globals["Function"].(map[string]any)
	globalTimeout := asInt(t, fn["Timeout"])
	visibility := func(queue string) int {
		return asInt(t, tpl.Resources[queue].Properties["VisibilityTimeout"])
	}
	require.GreaterOrEqual(t, visibility("CommandsQueue"), 6*globalTimeout)
	for _, name := range tpl.OfType("AWS::Serverless::Function") {
		props := tpl.Resources[name].Properties
		timeout := globalTimeout
		if v, ok := props["Timeout"]; ok {
			timeout = asInt(t, v)
		}
		evs, _ := props["Events"].(map[string]any)
		for evName, ev := range evs {
			e, _ := ev.(map[string]any)
			if e["Type"] != "SQS" {
				continue
			}
			ep, _ := e["Properties"].(map[string]any)
			queue := getAttTarget(ep["Queue"])
			require.NotEmpty(t, queue, "%s.%s: the queue must be !GetAtt of a queue in this template", name, evName)
			require.GreaterOrEqual(t, visibility(queue), 6*timeout, "%s.%s: visibility of %s", name, evName, queue)
		}
	}
}

func TestTemplateJobsTableIsTheOutbox(t *testing.T) {
	t.Parallel()
	p := loadRepoTemplate(t).Resources["JobsTable"].Properties
	require.Equal(t, "PAY_PER_REQUEST", p["BillingMode"])
	require.Equal(t, []any{map[string]any{"AttributeName": "job_id", "KeyType": "HASH"}}, p["KeySchema"])
	require.Equal(t, "NEW_AND_OLD_IMAGES", p["StreamSpecification"].(map[string]any)["StreamViewType"])
	ttl := p["TimeToLiveSpecification"].(map[string]any)
	require.Equal(t, "expires_at", ttl["AttributeName"])
	require.Equal(t, true, ttl["Enabled"])
}

func TestTemplateCandidatesBucketIsPrivateEncryptedAndTLSOnly(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	p := tpl.Resources["CandidatesBucket"].Properties
	block := p["PublicAccessBlockConfiguration"].(map[string]any)
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		require.Equal(t, true, block[k], k)
	}
	require.NotNil(t, p["BucketEncryption"])
	rules := p["LifecycleConfiguration"].(map[string]any)["Rules"].([]any)
	var aborts bool
	for _, r := range rules {
		if _, ok := r.(map[string]any)["AbortIncompleteMultipartUpload"]; ok {
			aborts = true
		}
	}
	require.True(t, aborts, "a lifecycle rule aborts incomplete multipart uploads")

	var tlsOnly bool
	for _, name := range tpl.OfType("AWS::S3::BucketPolicy") {
		pol := tpl.Resources[name].Properties
		if pol["Bucket"].(map[string]any)["Ref"] != "CandidatesBucket" {
			continue
		}
		for _, s := range pol["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := s.(map[string]any)
			cond, _ := st["Condition"].(map[string]any)
			b, _ := cond["Bool"].(map[string]any)
			if st["Effect"] == "Deny" && b["aws:SecureTransport"] == "false" {
				tlsOnly = true
			}
		}
	}
	require.True(t, tlsOnly, "the bucket policy denies requests without TLS")
}

// receiveBudgetProblem checks the rule that relates a job's generations to
// its command's receives. Every claim needs a receive, and the receive after
// the last generation's lease ends is the one whose takeover writes the job
// failed; so the commands queue must allow at least maxGenerations+1
// receives, or SQS dead-letters a command whose job could still have been
// recovered (or failed) by a worker. Receives that claim nothing (skipped at
// the deadline, a live lease held by another attempt) use up the margin; a
// command that runs out of receives anyway reaches the DLQ with its job
// still pending or running, and the sweeper's nudge re-issues it (pkg/jobs'
// doc.go).
func receiveBudgetProblem(tpl *samtemplate.Template, maxGenerations int) string {
	rp, _ := tpl.Resources["CommandsQueue"].Properties["RedrivePolicy"].(map[string]any)
	if rp == nil {
		return "the commands queue has no redrive policy"
	}
	var receives int
	switch n := rp["maxReceiveCount"].(type) {
	case int:
		receives = n
	default:
		return fmt.Sprintf("the commands queue's maxReceiveCount %#v is not a number", rp["maxReceiveCount"])
	}
	if receives < maxGenerations+1 {
		return fmt.Sprintf("the commands queue's maxReceiveCount %d is below MaxGenerations+1 = %d: "+
			"SQS would dead-letter a command before its job's generations are used up", receives, maxGenerations+1)
	}
	return ""
}

// deployableMaxGenerations is the largest MaxGenerations a deployment of tpl
// can set: the parameter's MaxValue, not its default, since every value the
// template accepts must fit the commands queue's receives. Without the
// parameter the worker uses jobs.DefaultMaxGenerations.
func deployableMaxGenerations(t *testing.T, tpl *samtemplate.Template) int {
	t.Helper()
	p, ok := tpl.Parameters["MaxGenerations"]
	if !ok {
		return int(jobs.DefaultMaxGenerations)
	}
	require.NotNil(t, p.MaxValue, "MaxGenerations has no MaxValue: a deployment could set any number of generations")
	return asInt(t, p.MaxValue)
}

func TestTemplateCommandsAllowEveryGenerationAReceive(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	require.Empty(t, receiveBudgetProblem(tpl, deployableMaxGenerations(t, tpl)))

	// The check reads the largest deployable value: the template's commands
	// queue with a MaxGenerations that may go up to 20 fails it, though the
	// default still fits.
	rp := tpl.Resources["CommandsQueue"].Properties["RedrivePolicy"].(map[string]any)
	loose, err := samtemplate.Parse(fmt.Appendf(nil, `
Parameters:
  MaxGenerations: {Type: Number, Default: 3, MinValue: 1, MaxValue: 20}
Resources:
  CommandsQueue:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: {deadLetterTargetArn: x, maxReceiveCount: %d}
`, rp["maxReceiveCount"]))
	require.NoError(t, err)
	require.Empty(t, receiveBudgetProblem(loose, asInt(t, loose.Parameters["MaxGenerations"].Default)), "the default fits")
	require.Contains(t, receiveBudgetProblem(loose, deployableMaxGenerations(t, loose)), "below MaxGenerations+1 = 21")

	// And a tight queue fails it: one receive too few.
	maxGenerations := deployableMaxGenerations(t, tpl)
	tight, err := samtemplate.Parse(fmt.Appendf(nil, `
Resources:
  CommandsQueue:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: {deadLetterTargetArn: x, maxReceiveCount: %d}
`, maxGenerations))
	require.NoError(t, err)
	require.Contains(t, receiveBudgetProblem(tight, maxGenerations), "below MaxGenerations+1")
}
