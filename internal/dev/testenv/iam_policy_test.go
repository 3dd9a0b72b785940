package testenv

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Condition key names are not case-sensitive in IAM ("Context key names
// are not case-sensitive": the IAM User Guide, "IAM JSON policy elements:
// Condition"), while a String operator's values are (each operator's rows
// are in TestConditionsAreEvaluatedAsIAMDoesOrRefused): a Deny that spells
// a key in another case than the request context denies all the same, and
// an unused value is named as the policy spells its key.
func TestConditionKeyNamesMatchInAnyCase(t *testing.T) {
	t.Parallel()
	put := IAMRequest{Action: "s3:PutObject", Resource: "arn:aws:s3:::st-b/candidates/x",
		Context: map[string][]string{"s3:ObjectCreationOperation": {"true"}, "s3:prefix": {"candidates/"}}}
	deny := IAMStatement{Sid: "NoCreate", Actions: []string{"s3:PutObject"}, Resources: []string{"arn:aws:s3:::st-b/*"},
		Condition: map[string]map[string][]string{"Bool": {"s3:objectcreationoperation": {"true"}}}}
	allow := IAMStatement{Sid: "Put", Allow: true, Actions: []string{"s3:PutObject"}, Resources: []string{"arn:aws:s3:::st-b/*"}}
	ok, err := RolePolicy{Role: "R", Statements: []IAMStatement{allow, deny}}.Allows(put)
	require.NoError(t, err)
	require.False(t, ok, "the Deny's key, in lower case, is the request's s3:ObjectCreationOperation")

	p := RolePolicy{Role: "R", Statements: []IAMStatement{{Sid: "List", Allow: true, Actions: []string{"s3:ListBucket"},
		Resources: []string{"arn:aws:s3:::st-b"}, Condition: map[string]map[string][]string{"StringLike": {"S3:PREFIX": {"candidates/*", "sweeper/*"}}}}}}
	list := IAMRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::st-b", Context: map[string][]string{"s3:prefix": {"candidates/x"}}}
	unused, err := p.Unused([]IAMRequest{list})
	require.NoError(t, err)
	require.Equal(t, []string{"List: s3:ListBucket on arn:aws:s3:::st-b: S3:PREFIX sweeper/*"}, unused)
}

// A resource policy's principal given as an account (its 12-digit id, or
// arn:aws:iam::ID:root) stands for every principal of that account ("When
// you use an AWS account identifier as the principal in a policy, you
// delegate authority to the account": the IAM User Guide, "AWS JSON policy
// elements: Principal"); the template's policies are Deny statements, which
// such a principal applies to each role of the account. An ARN of a role
// stands for that role only.
func TestAnAccountPrincipalIsEveryPrincipalOfTheAccount(t *testing.T) {
	t.Parallel()
	const worker = "arn:aws:iam::123456789012:role/st-WorkerRole"
	send := IAMRequest{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:eu-west-1:123456789012:q",
		Context: map[string][]string{"aws:PrincipalArn": {worker}}}
	for _, c := range []struct {
		principal string
		matches   bool
	}{
		{"123456789012", true},
		{"arn:aws:iam::123456789012:root", true},
		{worker, true},
		{"*", true},
		{"210987654321", false},
		{"arn:aws:iam::210987654321:root", false},
		{"arn:aws:iam::123456789012:role/st-RelayRole", false},
		{"12345678901", false},
	} {
		s := IAMStatement{Sid: "NoSend", Principals: []string{c.principal}, Actions: []string{"sqs:SendMessage"}, Resources: []string{"*"}}
		got, err := s.Matches(send)
		require.NoError(t, err, c.principal)
		require.Equal(t, c.matches, got, c.principal)
	}
}
