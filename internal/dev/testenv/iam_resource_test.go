package testenv

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// repoDeployment is the repository's template.yaml as a local deployment
// of stack "st" would resolve it: its bucket and its two queues.
func repoDeployment(t *testing.T) Deployment {
	t.Helper()
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	res := &localdeploy.Result{
		Resources: map[string]string{"CandidatesBucket": "st-bucket", "CommandsQueue": "http://sqs/st-commands.fifo", "EventsQueue": "http://sqs/st-events.fifo"},
		Attributes: map[string]map[string]string{
			"CandidatesBucket": {"Arn": "arn:aws:s3:::st-bucket"},
			"CommandsQueue":    {"Arn": "arn:aws:sqs:eu-west-1:000000000000:st-commands.fifo", "QueueName": "st-commands.fifo"},
			"EventsQueue":      {"Arn": "arn:aws:sqs:eu-west-1:000000000000:st-events.fifo", "QueueName": "st-events.fifo"},
		},
	}
	return Deployment{Template: tpl, Result: res, Stack: "st", Region: "eu-west-1"}
}

// The template's bucket and queue policies deny what a function's role
// alone would allow: a put under candidates/ without If-None-Match, a
// send to a queue by any role but the relay's and the operator's. The
// recorded requests carry the keys those denies read, so dropping
// If-None-Match from a request, or sending from the worker, is a denial.
func TestResourcePoliciesDenyWhatTheTemplatesBucketAndQueuePoliciesDeny(t *testing.T) {
	t.Parallel()
	d := repoDeployment(t)
	const operator = "arn:aws:iam::000000000000:role/operator"
	policies, err := ResourcePolicies(d, map[string]string{"OperatorRoleArn": operator})
	require.NoError(t, err)
	var sids []string
	for _, s := range policies.Statements {
		sids = append(sids, s.Sid)
	}
	require.ElementsMatch(t, []string{"CandidatesBucketPolicy.TLSOnly", "CandidatesBucketPolicy.CandidatesWriteOnce", "QueuesSendPolicy.NoOtherSender"}, sids)

	n := IAMNames{
		Buckets: map[string]string{"st-bucket": "arn:aws:s3:::st-bucket"},
		Queues:  map[string]string{"http://sqs/st-commands.fifo": "arn:aws:sqs:eu-west-1:000000000000:st-commands.fifo", "http://sqs/st-events.fifo": "arn:aws:sqs:eu-west-1:000000000000:st-events.fifo"},
	}
	role := func(name string) RolePolicy { return RolePolicy{Role: name, ARN: RoleARN(d, name)} }
	put := func(key, ifNoneMatch string) []IAMRequest {
		in := &s3.PutObjectInput{Bucket: aws.String("st-bucket"), Key: aws.String(key)}
		if ifNoneMatch != "" {
			in.IfNoneMatch = aws.String(ifNoneMatch)
		}
		return n.Requests(in)
	}
	send := func(url string) []IAMRequest { return n.Requests(&sqs.SendMessageInput{QueueUrl: aws.String(url)}) }
	for _, c := range []struct {
		name   string
		role   RolePolicy
		reqs   []IAMRequest
		denied string // the statement that denies, or ""
	}{
		{"a conditional put of a candidate", role("WorkerRole"), put("candidates/j/1/a.ndjson", "*"), ""},
		{"a plain put of a candidate", role("WorkerRole"), put("candidates/j/1/a.ndjson", ""), "CandidatesWriteOnce"},
		{"a plain put of a cursor", role("SweeperRole"), put("sweeper/orphans", ""), ""},
		{"a read", role("IntakeRole"), n.Requests(&s3.GetObjectInput{Bucket: aws.String("st-bucket"), Key: aws.String("candidates/j/1/a.ndjson")}), ""},
		{"the relay's send", role("RelayRole"), send("http://sqs/st-commands.fifo"), ""},
		{"the operator's send", RolePolicy{Role: "operator", ARN: operator}, send("http://sqs/st-events.fifo"), ""},
		{"the worker's send to commands", role("WorkerRole"), send("http://sqs/st-commands.fifo"), "NoOtherSender"},
		{"the projector's send to events", role("ProjectorRole"), send("http://sqs/st-events.fifo"), "NoOtherSender"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			denied, err := policies.Denied(c.role, c.reqs)
			require.NoError(t, err)
			if c.denied == "" {
				require.Empty(t, denied)
				return
			}
			require.Len(t, denied, 1)
			require.True(t, strings.HasSuffix(denied[0], "."+c.denied+")"), denied[0])
		})
	}

	// Over plain HTTP, anything is denied.
	plain := n.Requests(&s3.GetObjectInput{Bucket: aws.String("st-bucket"), Key: aws.String("x")})[0].AsSentBy(role("IntakeRole"))
	plain.Context["aws:SecureTransport"] = []string{"false"}
	var tls IAMStatement
	for _, s := range policies.Statements {
		if s.Sid == "CandidatesBucketPolicy.TLSOnly" {
			tls = s
		}
	}
	ok, err := tls.Matches(plain)
	require.NoError(t, err)
	require.True(t, ok, "TLSOnly denies a request without TLS")
}

// A role's ARN (RoleARN, RolePolicy.ARN) is the one a resource policy's
// !GetAtt ROLE.Arn resolves to, so that aws:PrincipalArn conditions
// compare like with like.
func TestARolesARNIsTheOneItsPoliciesName(t *testing.T) {
	t.Parallel()
	d := repoDeployment(t)
	require.Equal(t, "arn:aws:iam::000000000000:role/st-RelayRole", RoleARN(d, "RelayRole"))
	got, err := d.withRoles(nil).resolve(map[string]any{"Fn::GetAtt": []any{"RelayRole", "Arn"}})
	require.NoError(t, err)
	require.Equal(t, RoleARN(d, "RelayRole"), got)
}
