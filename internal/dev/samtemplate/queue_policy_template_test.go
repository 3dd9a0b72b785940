package samtemplate_test

import (
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The principals a deployment lets send to the commands and events queues,
// as the values aws:PrincipalArn takes for them (a role's ARN, whatever
// its session), keyed by what they stand for in the template.
var (
	relayRole    = map[string]any{"Fn::GetAtt": []any{"RelayRole", "Arn"}}
	operatorRole = map[string]any{"Ref": "OperatorRoleArn"}
)

// sqsSend is the action SendMessage and SendMessageBatch are authorised as.
const sqsSend = "sqs:SendMessage"

// Only the relay (every command and event) and the operator's role (a
// quarantine redrive sends parked messages back) may send to the commands
// and events queues: each has a queue policy that allows those two and
// denies every other principal, whatever its own IAM policies allow. The
// policies touch nothing but sends: the event source mappings receive and
// delete with the consumers' roles, and SQS moves messages to the
// dead-letter queues itself.
func TestTemplateOnlyTheRelayAndTheOperatorSendToTheQueues(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	require.Equal(t, relayRole, getAttOf(tpl.Resources["RelayFunction"].Properties["Role"]), "the relay's role is RelayRole")
	covered := map[string]int{}
	for _, name := range tpl.OfType("AWS::SQS::QueuePolicy") {
		p := tpl.Resources[name].Properties
		var queues []string
		for _, q := range asList(p["Queues"]) {
			ref, _ := asMap(q)["Ref"].(string)
			covered[ref]++
			queues = append(queues, ref)
		}
		doc := asMap(p["PolicyDocument"])
		require.Equal(t, "2012-10-17", doc["Version"], name)
		var allows, denies int
		for _, st := range asList(doc["Statement"]) {
			s := asMap(st)
			require.Equal(t, []any{sqsSend}, asList(s["Action"]), "%s: the policy is about sending only", name)
			var arns []string
			for _, r := range asList(s["Resource"]) {
				arns = append(arns, getAttTarget(r))
			}
			require.ElementsMatch(t, queues, arns, "%s: each statement names exactly the policy's queues", name)
			switch s["Effect"] {
			case "Allow":
				allows++
				require.ElementsMatch(t, []any{relayRole, operatorRole}, asList(asMap(s["Principal"])["AWS"]), name)
				require.Nil(t, s["Condition"], name)
			case "Deny":
				denies++
				require.Equal(t, "*", s["Principal"], "%s: the deny is for every principal but the senders", name)
				require.Equal(t, map[string]any{"ArnNotEquals": map[string]any{"aws:PrincipalArn": []any{relayRole, operatorRole}}},
					s["Condition"], name)
			default:
				t.Fatalf("%s: effect %v", name, s["Effect"])
			}
		}
		require.Equal(t, 1, allows, name)
		require.Equal(t, 1, denies, name)
	}
	require.Equal(t, map[string]int{"CommandsQueue": 1, "EventsQueue": 1}, covered, "one policy on each of the two queues, none on the others")

	// Evaluated for the principals that matter, with the deployment's ARNs.
	arns := map[string]string{
		"relay":     "arn:aws:iam::123456789012:role/fifoworker-RelayRole-ABC",
		"operator":  "arn:aws:iam::123456789012:role/ops/fifoworker-operator",
		"worker":    "arn:aws:iam::123456789012:role/fifoworker-WorkerRole-DEF",
		"an admin":  "arn:aws:iam::123456789012:role/Admin",
		"a user":    "arn:aws:iam::123456789012:user/alice",
		"anonymous": "",
	}
	deployed := func(v any) string {
		switch {
		case slices.Equal(asList(getAttOf(v)["Fn::GetAtt"]), asList(relayRole["Fn::GetAtt"])):
			return arns["relay"]
		case asMap(v)["Ref"] == "OperatorRoleArn":
			return arns["operator"]
		}
		t.Fatalf("a principal this test does not know: %v", v)
		return ""
	}
	for _, name := range tpl.OfType("AWS::SQS::QueuePolicy") {
		doc := asMap(tpl.Resources[name].Properties["PolicyDocument"])
		for who, arn := range arns {
			want := who == "relay" || who == "operator"
			require.Equal(t, !want, deniesSend(t, doc, arn, deployed), "%s: %s may send: %v", name, who, want)
		}
	}
}

// deniesSend evaluates the policy's Deny statements for a SendMessage by
// principalArn ("" for an anonymous request, which has no aws:PrincipalArn),
// in the one condition form the policies use. ArnNotEquals with several
// values is true when the key equals none of them, and true when the key is
// absent: IAM's negated operators match a missing key.
func deniesSend(t *testing.T, doc map[string]any, principalArn string, deployed func(any) string) bool {
	t.Helper()
	for _, st := range asList(doc["Statement"]) {
		s := asMap(st)
		if s["Effect"] != "Deny" || s["Principal"] != "*" || !slices.Contains(asList(s["Action"]), any(sqsSend)) {
			continue
		}
		cond := asMap(s["Condition"])
		require.Len(t, cond, 1)
		values := asList(asMap(cond["ArnNotEquals"])["aws:PrincipalArn"])
		require.NotEmpty(t, values)
		matched := false
		for _, v := range values {
			matched = matched || (principalArn != "" && deployed(v) == principalArn)
		}
		if !matched {
			return true
		}
	}
	return false
}

// The operator's role is a parameter without a default (a deployment names
// it, or a redrive would be refused when it is needed most), and only a
// role's ARN passes: a queue policy's principal must be one exact
// principal, and aws:PrincipalArn is the role's ARN for its sessions.
func TestTemplateOperatorRoleIsARoleARN(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	p, ok := tpl.Parameters["OperatorRoleArn"]
	require.True(t, ok)
	require.Equal(t, "String", p.Type)
	require.Nil(t, p.Default, "no default: each deployment names its operators' role")
	require.NotEmpty(t, p.Description)
	pattern := regexp.MustCompile(p.AllowedPattern)
	for arn, ok := range map[string]bool{
		"arn:aws:iam::123456789012:role/fifoworker-operator":                                           true,
		"arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_Ops_1": true,
		"arn:aws-cn:iam::123456789012:role/ops":                                                        true,
		"arn:aws:iam::123456789012:user/alice":                                                         false,
		"arn:aws:iam::123456789012:root":                                                               false,
		"arn:aws:sts::123456789012:assumed-role/ops/session":                                           false,
		"arn:aws:iam::12345678901:role/ops":                                                            false,
		"arn:aws:iam::123456789012:role/":                                                              false,
		"arn:aws:iam::123456789012:role/*":                                                             false,
		"*":                                                                                            false,
		"":                                                                                             false,
	} {
		require.Equal(t, ok, pattern.MatchString(arn), arn)
	}
}

// getAttOf returns v when it is a Fn::GetAtt, nil otherwise.
func getAttOf(v any) map[string]any {
	if getAttTarget(v) == "" {
		return nil
	}
	return asMap(v)
}
