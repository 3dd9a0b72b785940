package samtemplate_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The protections the template leaves off by default, each a deliberate
// trade-off said in template.yaml and docs/SECURITY.md, are switched on
// by a parameter, and the switch does what it says: this test reads the
// template as a deployment with each parameter sees it (and
// internal/dev/cfnschema's TestRepoTemplateMatchesTheRegistrySchemas
// checks both branches of each Fn::If against AWS's schemas).

func getAtt(resource, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{resource, attr}}
}

// A customer managed key, created in the stack, encrypts every table,
// queue, log group, the bucket and the alarm topic; without it each uses
// the encryption at rest it has today.
func TestTemplateCustomerManagedKeySwitchesOnEverywhere(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	p := tpl.Parameters["CustomerManagedKey"]
	require.Equal(t, "false", p.Default)
	require.ElementsMatch(t, []any{"true", "false"}, p.AllowedValues)
	on := map[string]string{"CustomerManagedKey": "true"}
	key := getAtt("DataKey", "Arn")
	require.False(t, exists(t, tpl, nil, "DataKey"))
	require.True(t, exists(t, tpl, on, "DataKey"))
	k := tpl.Resources["DataKey"]
	require.Equal(t, "AWS::KMS::Key", k.Type)
	require.Equal(t, true, k.Properties["EnableKeyRotation"])
	require.Equal(t, "Retain", k.Attributes["DeletionPolicy"], "the retained tables stay readable after the stack")
	require.Equal(t, "Retain", k.Attributes["UpdateReplacePolicy"])

	props := func(values map[string]string, resource string) map[string]any {
		m, _ := chosen(t, tpl, values, tpl.Resources[resource].Properties).(map[string]any)
		return m
	}
	for _, name := range tpl.OfType("AWS::DynamoDB::Table") {
		require.Equal(t, map[string]any{"SSEEnabled": true}, props(nil, name)["SSESpecification"], name)
		require.Equal(t, map[string]any{"SSEEnabled": true, "SSEType": "KMS", "KMSMasterKeyId": key}, props(on, name)["SSESpecification"], name)
	}
	for _, name := range tpl.OfType("AWS::SQS::Queue") {
		off := props(nil, name)
		require.Equal(t, true, off["SqsManagedSseEnabled"], name)
		require.NotContains(t, off, "KmsMasterKeyId", name)
		with := props(on, name)
		require.Equal(t, false, with["SqsManagedSseEnabled"], "%s: one encryption or the other", name)
		require.Equal(t, key, with["KmsMasterKeyId"], name)
	}
	for _, name := range tpl.OfType("AWS::Logs::LogGroup") {
		require.NotContains(t, props(nil, name), "KmsKeyId", name)
		require.Equal(t, key, props(on, name)["KmsKeyId"], name)
	}
	for _, name := range tpl.OfType("AWS::SNS::Topic") {
		require.NotContains(t, props(nil, name), "KmsMasterKeyId", name)
		require.Equal(t, key, props(on, name)["KmsMasterKeyId"], name)
	}
	sse := func(values map[string]string) any {
		enc := props(values, "CandidatesBucket")["BucketEncryption"].(map[string]any)
		return enc["ServerSideEncryptionConfiguration"].([]any)[0]
	}
	require.Equal(t, map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}}, sse(nil))
	require.Equal(t, map[string]any{
		"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key},
		"BucketKeyEnabled":              true, // one KMS request per object's data key, not per request
	}, sse(on))

	// The key policy lets every service the stack encrypts with use it: the
	// account's principals through DynamoDB, SQS and S3 only, CloudWatch
	// Logs for the log groups, CloudWatch for the alarm topic.
	services := map[string]bool{}
	for _, st := range asMap(k.Properties["KeyPolicy"])["Statement"].([]any) {
		s := asMap(st)
		require.Equal(t, "Allow", s["Effect"])
		principal := asMap(s["Principal"])
		if svc, ok := principal["Service"]; ok {
			services[mustSub(t, svc)] = true
			continue
		}
		cond := asMap(asMap(s["Condition"])["StringEquals"])
		if cond["kms:ViaService"] == nil {
			continue
		}
		for _, via := range asList(cond["kms:ViaService"]) {
			services[mustSub(t, via)] = true
		}
	}
	for _, want := range []string{
		"dynamodb.${AWS::Region}.amazonaws.com", "sqs.${AWS::Region}.amazonaws.com", "s3.${AWS::Region}.amazonaws.com",
		"logs.${AWS::Region}.amazonaws.com", "cloudwatch.amazonaws.com",
	} {
		require.True(t, services[want], "the key policy does not let %s use the key", want)
	}
}

func mustSub(t *testing.T, v any) string {
	t.Helper()
	if s, ok := v.(string); ok {
		return s
	}
	s, ok := asMap(v)["Fn::Sub"].(string)
	require.True(t, ok, "%v is neither a string nor a Fn::Sub", v)
	return s
}

// Code signing: with a signing profile version given, a code signing
// configuration that refuses unsigned code guards every function.
func TestTemplateCodeSigningSwitchesOnForEveryFunction(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	require.Equal(t, "", tpl.Parameters["SigningProfileVersionArn"].Default)
	on := map[string]string{"SigningProfileVersionArn": "arn:aws:signer:eu-west-1:123456789012:/signing-profiles/fifoworker/abcdef0123"}
	require.False(t, exists(t, tpl, nil, "CodeSigningConfig"))
	require.True(t, exists(t, tpl, on, "CodeSigningConfig"))
	require.Equal(t, map[string]any{
		"AllowedPublishers":   map[string]any{"SigningProfileVersionArns": []any{ref("SigningProfileVersionArn")}},
		"CodeSigningPolicies": map[string]any{"UntrustedArtifactOnDeployment": "Enforce"},
		"Description":         map[string]any{"Fn::Sub": "${AWS::StackName}: only code signed by the given profile"},
	}, chosen(t, tpl, on, tpl.Resources["CodeSigningConfig"].Properties))
	for fn := range functions {
		v := tpl.Resources[fn].Properties["CodeSigningConfigArn"]
		require.Nil(t, chosen(t, tpl, nil, v), fn)
		require.Equal(t, getAtt("CodeSigningConfig", "CodeSigningConfigArn"), chosen(t, tpl, on, v), fn)
	}
}

// S3 server access logging of the candidates bucket (the downloads of
// results through presigned URLs among them), into a bucket given.
func TestTemplateBucketAccessLoggingSwitchesOn(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	require.Equal(t, "", tpl.Parameters["AccessLogBucketName"].Default)
	v := tpl.Resources["CandidatesBucket"].Properties["LoggingConfiguration"]
	require.Nil(t, chosen(t, tpl, nil, v))
	require.Equal(t, map[string]any{
		"DestinationBucketName": ref("AccessLogBucketName"),
		"LogFilePrefix":         map[string]any{"Fn::Sub": "${AWS::StackName}/candidates/"},
	}, chosen(t, tpl, map[string]string{"AccessLogBucketName": "org-access-logs"}, v))
}
