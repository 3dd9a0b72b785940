package localdeploy

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

func TestOrderPutsDependenciesFirstAndFindsCycles(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(`
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: {deadLetterTargetArn: !GetAtt D.Arn}
  D:
    Type: AWS::SQS::Queue
  P:
    Type: AWS::S3::BucketPolicy
    Properties:
      Bucket: !Ref B
      Resource: !Sub "${B.Arn}/*"
  B:
    Type: AWS::S3::Bucket
`))
	require.NoError(t, err)
	got, err := order(tpl.Resources)
	require.NoError(t, err)
	require.Equal(t, []string{"B", "D", "P", "Q"}, got)

	cyclic, err := samtemplate.Parse([]byte(`
Resources:
  A: {Type: X, Properties: {V: !Ref B}}
  B: {Type: X, Properties: {V: !GetAtt A.Arn}}
`))
	require.NoError(t, err)
	_, err = order(cyclic.Resources)
	require.ErrorContains(t, err, "dependency cycle")
}

func TestResolveIntrinsics(t *testing.T) {
	t.Parallel()
	tpl := &samtemplate.Template{Parameters: map[string]samtemplate.Parameter{"Timeout": {Default: 60}}}
	r := &resolver{tpl: tpl, stackName: "st", region: "eu-west-1",
		refs:  map[string]string{"Q": "http://q"},
		attrs: map[string]map[string]string{"Q": {"Arn": "arn:q"}}}
	for _, c := range []struct {
		in   any
		want any
	}{
		{map[string]any{"Ref": "Timeout"}, "60"},
		{map[string]any{"Ref": "AWS::StackName"}, "st"},
		{map[string]any{"Ref": "Q"}, "http://q"},
		{map[string]any{"Fn::GetAtt": []any{"Q", "Arn"}}, "arn:q"},
		{map[string]any{"Fn::Sub": "${AWS::StackName}-${AWS::Region}-${Q.Arn}-${!Literal}"}, "st-eu-west-1-arn:q-${Literal}"},
		{map[string]any{"Fn::Sub": []any{"${X}/${Timeout}", map[string]any{"X": map[string]any{"Ref": "Q"}}}}, "http://q/60"},
		{map[string]any{"Fn::Join": []any{":", []any{"a", map[string]any{"Ref": "AWS::AccountId"}}}}, "a:" + LocalAccountID},
		{map[string]any{"Nested": []any{map[string]any{"Ref": "Q"}}}, map[string]any{"Nested": []any{"http://q"}}},
	} {
		got, err := r.resolve(c.in)
		require.NoError(t, err, "%v", c.in)
		require.Equal(t, c.want, got, "%v", c.in)
	}
	for _, bad := range []any{
		map[string]any{"Ref": "Nope"},
		map[string]any{"Fn::GetAtt": []any{"Q", "StreamArn"}},
		map[string]any{"Fn::If": []any{"c", 1, 2}},
		map[string]any{"Fn::Sub": "${Missing}"},
	} {
		_, err := r.resolve(bad)
		require.Error(t, err, "%v", bad)
	}
}

func TestNotCreatedNamesTheResourcesAnOutputNeedsThatWereNotDeployed(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(`
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
  Fn:
    Type: AWS::Serverless::Function
  Q:
    Type: AWS::SQS::Queue
Outputs:
  Url:
    Value: !Sub "https://${Api}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${Fn.Arn}"
  Queue:
    Value: !Ref Q
  Region:
    Value: !Ref AWS::Region
`))
	require.NoError(t, err)
	created := map[string]string{"Q": "http://127.0.0.1/q"}
	value := func(name string) any { return tpl.Outputs[name].(map[string]any)["Value"] }
	require.Equal(t, "Api, Fn", notCreated(value("Url"), tpl.Resources, created))
	require.Empty(t, notCreated(value("Queue"), tpl.Resources, created))
	require.Empty(t, notCreated(value("Region"), tpl.Resources, created), "pseudo parameters are not resources")
}

func TestResolveUsesWhatTheDeploymentCreated(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(`
Parameters:
  Claim: {Type: String, Default: tenant}
Resources:
  Q: {Type: AWS::SQS::Queue}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          QUEUE_URL: !Ref Q
          QUEUE_ARN: !GetAtt Q.Arn
          CLAIM: !Ref Claim
          NAME: !Sub "${AWS::StackName}-x"
          MISSING: !Ref Api
`))
	require.NoError(t, err)
	res := &Result{Resources: map[string]string{"Q": "http://127.0.0.1/q"}, Attributes: map[string]map[string]string{"Q": {"Arn": "arn:q"}}}
	vars := tpl.Resources["Fn"].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	delete(vars, "MISSING")
	got, err := Resolve(tpl, res, "demo", "eu-west-1", vars)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"QUEUE_URL": "http://127.0.0.1/q", "QUEUE_ARN": "arn:q", "CLAIM": "tenant", "NAME": "demo-x"}, got)
	_, err = Resolve(tpl, res, "demo", "eu-west-1", map[string]any{"Ref": "Api"})
	require.ErrorContains(t, err, "unresolved Ref Api")
}
