package testenv

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

const iamTemplate = `
Parameters:
  UseKey: {Type: String, Default: "no", AllowedValues: ["yes", "no"]}
Conditions:
  Keyed: !Equals [!Ref UseKey, "yes"]
Resources:
  Holds:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{AttributeName: hold, KeyType: HASH}, {AttributeName: sk, KeyType: RANGE}]
      GlobalSecondaryIndexes:
        - IndexName: held
          KeySchema: [{AttributeName: held_queue, KeyType: HASH}]
  Q:
    Type: AWS::SQS::Queue
  B:
    Type: AWS::S3::Bucket
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Role: !GetAtt FnRole.Arn
      Events:
        Work: {Type: SQS, Properties: {Queue: !GetAtt Q.Arn}}
        Api: {Type: HttpApi}
  FnRole:
    Type: AWS::IAM::Role
    Properties:
      Policies:
        - PolicyName: fn
          PolicyDocument:
            Statement:
              - Sid: Logs
                Effect: Allow
                Action: [logs:PutLogEvents]
                Resource: !GetAtt Missing.Arn
              - Sid: Holds
                Effect: Allow
                Action: [dynamodb:GetItem, dynamodb:PutItem]
                Resource: !GetAtt Holds.Arn
                Condition:
                  ForAllValues:StringLike:
                    dynamodb:LeadingKeys: [!Sub "${Q.QueueName}#*"]
              - Sid: Listing
                Effect: Allow
                Action: s3:ListBucket
                Resource: !GetAtt B.Arn
                Condition: {StringLike: {s3:prefix: ["candidates/*", "sweeper/*"]}}
              - Sid: Consume
                Effect: Allow
                Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes, sqs:ChangeMessageVisibility]
                Resource: !GetAtt Q.Arn
              - Sid: Key
                Effect: Allow
                Action: !If [Keyed, [kms:Decrypt], !Ref AWS::NoValue]
                Resource: !If [Keyed, "arn:aws:kms:eu-west-1:1:key/k", !Ref AWS::NoValue]
  Extra:
    Type: AWS::IAM::Policy
    Properties:
      Roles: [!Ref FnRole]
      PolicyDocument:
        Statement:
          - Sid: NoDeletes
            Effect: Deny
            Action: s3:DeleteObject
            Resource: !Sub "${B.Arn}/*"
`

func iamDeployment(t *testing.T) Deployment {
	t.Helper()
	tpl, err := samtemplate.Parse([]byte(iamTemplate))
	require.NoError(t, err)
	res := &localdeploy.Result{
		Resources: map[string]string{"Holds": "st-Holds", "Q": "http://sqs/q.fifo", "B": "st-b"},
		Attributes: map[string]map[string]string{
			"Holds": {"Arn": "arn:aws:dynamodb:local:0:table/st-Holds"},
			"Q":     {"Arn": "arn:aws:sqs:local:0:q.fifo", "QueueName": "q.fifo"},
			"B":     {"Arn": "arn:aws:s3:::st-b"},
		},
	}
	return Deployment{Template: tpl, Result: res, Stack: "st", Region: "eu-west-1"}
}

func TestRequestsAreTheIAMActionsOnTheResourcesTheyName(t *testing.T) {
	t.Parallel()
	d := iamDeployment(t)
	n := NamesOf(d.Template, d.Result)
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	table := aws.String("st-Holds")
	for _, c := range []struct {
		in   any
		want []string
	}{
		{&dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{Put: &ddbtypes.Put{TableName: table, Item: map[string]ddbtypes.AttributeValue{"hold": s("q.fifo#g"), "sk": s("m#1")}}},
			{Update: &ddbtypes.Update{TableName: table, Key: map[string]ddbtypes.AttributeValue{"hold": s("q.fifo#g")}}},
			{ConditionCheck: &ddbtypes.ConditionCheck{TableName: table, Key: map[string]ddbtypes.AttributeValue{"hold": s("x")}}},
		}}, []string{
			`dynamodb:PutItem arn:aws:dynamodb:local:0:table/st-Holds dynamodb:LeadingKeys=["q.fifo#g"]`,
			`dynamodb:UpdateItem arn:aws:dynamodb:local:0:table/st-Holds dynamodb:LeadingKeys=["q.fifo#g"]`,
			`dynamodb:ConditionCheckItem arn:aws:dynamodb:local:0:table/st-Holds dynamodb:LeadingKeys=["x"]`,
		}},
		{&dynamodb.QueryInput{TableName: table, IndexName: aws.String("held"), KeyConditionExpression: aws.String("#q = :q and held_at > :t"),
			ExpressionAttributeNames: map[string]string{"#q": "held_queue"}, ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":q": s("q.fifo"), ":t": s("1")}},
			[]string{`dynamodb:Query arn:aws:dynamodb:local:0:table/st-Holds/index/held dynamodb:LeadingKeys=["q.fifo"]`}},
		{&dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{"st-Holds": {Keys: []map[string]ddbtypes.AttributeValue{
			{"hold": s("q.fifo#b")}, {"hold": s("q.fifo#a")}, {"hold": s("q.fifo#a")},
		}}}}, []string{`dynamodb:BatchGetItem arn:aws:dynamodb:local:0:table/st-Holds dynamodb:LeadingKeys=["q.fifo#a" "q.fifo#b"]`}},
		{&s3.GetObjectInput{Bucket: aws.String("st-b"), Key: aws.String("candidates/k"), VersionId: aws.String("v1")},
			[]string{"s3:GetObjectVersion arn:aws:s3:::st-b/candidates/k"}},
		{&s3.HeadObjectInput{Bucket: aws.String("st-b"), Key: aws.String("candidates/k")}, []string{"s3:GetObject arn:aws:s3:::st-b/candidates/k"}},
		{&s3.ListObjectsV2Input{Bucket: aws.String("st-b"), Prefix: aws.String("candidates/")},
			[]string{`s3:ListBucket arn:aws:s3:::st-b s3:prefix=["candidates/"]`}},
		{&s3.DeleteObjectsInput{Bucket: aws.String("st-b"), Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{{Key: aws.String("a")}, {Key: aws.String("b"), VersionId: aws.String("v")}}}},
			[]string{"s3:DeleteObject arn:aws:s3:::st-b/a", "s3:DeleteObjectVersion arn:aws:s3:::st-b/b"}},
		{&sqs.SendMessageBatchInput{QueueUrl: aws.String("http://sqs/q.fifo")}, []string{"sqs:SendMessage arn:aws:sqs:local:0:q.fifo"}},
		{&sqs.GetQueueUrlInput{QueueName: aws.String("q.fifo")}, []string{"sqs:GetQueueUrl arn:aws:sqs:local:0:q.fifo"}},
		{&sqs.SendMessageInput{QueueUrl: aws.String("http://sqs/other")}, []string{"sqs:SendMessage unknown queue http://sqs/other"}},
		{&dynamodb.ScanInput{TableName: table}, []string{"dynamodb:Scan arn:aws:dynamodb:local:0:table/st-Holds"}},
		{&dynamodb.DescribeTableInput{TableName: table}, []string{"unknown: *dynamodb.DescribeTableInput (teach testenv.IAMNames.Requests) "}},
	} {
		var got []string
		for _, r := range n.Requests(c.in) {
			got = append(got, r.String())
		}
		require.Equal(t, c.want, got, "%T", c.in)
	}
}

func TestARoleAllowsAndUsesWhatItsStatementsSay(t *testing.T) {
	t.Parallel()
	d := iamDeployment(t)
	p, err := FunctionRole(d, "Fn", "logs")
	require.NoError(t, err, "the logs statement is exempt, so its missing log group is not resolved")
	require.Equal(t, "FnRole", p.Role)
	var sids []string
	for _, s := range p.Statements {
		sids = append(sids, s.Sid)
	}
	require.Equal(t, []string{"Holds", "Listing", "Consume", "NoDeletes"}, sids, "the key's statement is off: its condition is false")

	table := "arn:aws:dynamodb:local:0:table/st-Holds"
	leading := func(keys ...string) map[string][]string { return map[string][]string{"dynamodb:LeadingKeys": keys} }
	for _, c := range []struct {
		req     IAMRequest
		allowed bool
	}{
		{IAMRequest{Action: "dynamodb:GetItem", Resource: table, Context: leading("q.fifo#g")}, true},
		{IAMRequest{Action: "DynamoDB:getitem", Resource: table, Context: leading("q.fifo#g")}, true},
		{IAMRequest{Action: "dynamodb:GetItem", Resource: table, Context: leading("q.fifo#g", "events.fifo#g")}, false},
		{IAMRequest{Action: "dynamodb:GetItem", Resource: table, Context: leading()}, true},
		{IAMRequest{Action: "dynamodb:UpdateItem", Resource: table, Context: leading("q.fifo#g")}, false},
		{IAMRequest{Action: "dynamodb:GetItem", Resource: table + "/index/held", Context: leading("q.fifo")}, false},
		{IAMRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::st-b", Context: map[string][]string{"s3:prefix": {"candidates/x"}}}, true},
		{IAMRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::st-b", Context: map[string][]string{"s3:prefix": {"other/"}}}, false},
		{IAMRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::st-b"}, false},
		{IAMRequest{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::st-b/x"}, false},
	} {
		got, err := p.Allows(c.req)
		require.NoError(t, err)
		require.Equal(t, c.allowed, got, c.req.String())
	}

	esm, err := EventSourceRequests(d, "Fn")
	require.NoError(t, err)
	require.Equal(t, []IAMRequest{
		{Action: "sqs:ReceiveMessage", Resource: "arn:aws:sqs:local:0:q.fifo"},
		{Action: "sqs:DeleteMessage", Resource: "arn:aws:sqs:local:0:q.fifo"},
		{Action: "sqs:GetQueueAttributes", Resource: "arn:aws:sqs:local:0:q.fifo"},
	}, esm)
	used := append(append([]IAMRequest{}, esm...),
		IAMRequest{Action: "dynamodb:GetItem", Resource: table, Context: leading("q.fifo#g")},
		IAMRequest{Action: "dynamodb:PutItem", Resource: table, Context: leading("other#g")},
		IAMRequest{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::st-b/x"},
	)
	unused, err := p.Unused(used)
	require.NoError(t, err)
	require.Equal(t, []string{
		"Holds: dynamodb:PutItem on arn:aws:dynamodb:local:0:table/st-Holds", // its one request breaks the condition
		"Listing: s3:ListBucket on arn:aws:s3:::st-b",
		"Consume: sqs:ChangeMessageVisibility on arn:aws:sqs:local:0:q.fifo",
	}, unused)
	unused, err = p.Unused(append(used, IAMRequest{Action: "s3:ListBucket", Resource: "arn:aws:s3:::st-b", Context: map[string][]string{"s3:prefix": {"candidates/"}}}))
	require.NoError(t, err)
	require.Contains(t, unused, "Listing: s3:ListBucket on arn:aws:s3:::st-b: s3:prefix sweeper/*", "a condition's value nothing needs")
	require.NotContains(t, unused, "Listing: s3:ListBucket on arn:aws:s3:::st-b: s3:prefix candidates/*")
	refused, err := p.Refused(used)
	require.NoError(t, err)
	require.Equal(t, []string{
		`dynamodb:PutItem arn:aws:dynamodb:local:0:table/st-Holds dynamodb:LeadingKeys=["other#g"]`,
		"s3:DeleteObject arn:aws:s3:::st-b/x",
	}, refused)

	keyed := iamDeployment(t)
	keyed.Template.Parameters["UseKey"] = samtemplate.Parameter{Type: "String", Default: "yes"}
	p, err = FunctionRole(keyed, "Fn", "logs")
	require.NoError(t, err)
	require.Len(t, p.Statements, 5, "the key's statement is on")
}

func TestConditionsAreEvaluatedAsIAMDoesOrRefused(t *testing.T) {
	t.Parallel()
	ctx := map[string][]string{"dynamodb:LeadingKeys": {"a#1", "a#2"}, "s3:prefix": {"x/"}, "s3:ObjectCreationOperation": {"true"}}
	for _, c := range []struct {
		cond  map[string]map[string][]string
		holds bool
	}{
		{map[string]map[string][]string{"ForAllValues:StringLike": {"dynamodb:LeadingKeys": {"a#*"}}}, true},
		{map[string]map[string][]string{"ForAllValues:StringLike": {"dynamodb:LeadingKeys": {"a#1"}}}, false},
		{map[string]map[string][]string{"ForAnyValue:StringEquals": {"dynamodb:LeadingKeys": {"a#1"}}}, true},
		{map[string]map[string][]string{"ForAllValues:StringEquals": {"other": {"a"}}}, true},
		{map[string]map[string][]string{"StringEquals": {"s3:prefix": {"x/"}}}, true},
		{map[string]map[string][]string{"StringNotLike": {"s3:prefix": {"x*"}}}, false},
		{map[string]map[string][]string{"StringNotEquals": {"missing": {"x"}}}, true},
		{map[string]map[string][]string{"StringLike": {"missing": {"*"}}}, false},
		{map[string]map[string][]string{"StringLike": {"s3:prefix": {"x?"}}}, true},
		// Key names match in any case (TestConditionKeyNamesMatchInAnyCase);
		// a String operator's values do not.
		{map[string]map[string][]string{"Bool": {"s3:objectcreationoperation": {"true"}}}, true},
		{map[string]map[string][]string{"Bool": {"S3:OBJECTCREATIONOPERATION": {"true"}}}, true},
		{map[string]map[string][]string{"StringEquals": {"S3:Prefix": {"x/"}}}, true},
		{map[string]map[string][]string{"StringEquals": {"s3:prefix": {"X/"}}}, false},
		{map[string]map[string][]string{"StringNotEquals": {"S3:PREFIX": {"x/"}}}, false},
		{map[string]map[string][]string{"ForAnyValue:StringEquals": {"DynamoDB:leadingkeys": {"a#2"}}}, true},
		{map[string]map[string][]string{"Null": {"s3:objectCreationOperation": {"true"}}}, false},
		{map[string]map[string][]string{"Null": {"S3:If-None-Match": {"true"}}}, true},
	} {
		got, err := conditionHolds(c.cond, ctx)
		require.NoError(t, err, "%v", c.cond)
		require.Equal(t, c.holds, got, "%v", c.cond)
	}
	for _, bad := range []map[string]map[string][]string{
		{"DateGreaterThan": {"aws:CurrentTime": {"x"}}},
		{"StringLike": {"dynamodb:LeadingKeys": {"a#*"}}},
		{"ForEach:StringLike": {"s3:prefix": {"x"}}},
	} {
		_, err := conditionHolds(bad, ctx)
		require.ErrorIs(t, err, ErrUnsupportedPolicy, "%v", bad)
	}
}
