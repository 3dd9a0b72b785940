package cfnschema_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKafkaTemplateMatchesTheRegistrySchemas: template-kafka.yaml, the
// Kafka variant of the deployment, passes the same check as template.yaml
// (TestRepoTemplateMatchesTheRegistrySchemas): its plain resources (the
// worker's and the projector's Kafka event source mappings, the security
// groups and VPC endpoints among them) and its SAM functions against AWS's
// registry schemas, each Fn::If branch (an MSK or a self-managed cluster,
// endpoints made or not) included, and every reference.
func TestKafkaTemplateMatchesTheRegistrySchemas(t *testing.T) {
	t.Parallel()
	requireMatchesRegistrySchemas(t, loadTemplate(t, "template-kafka.yaml"))
}

// A parameter value the template's Rules refuse is never deployed, so the
// check does not hold it to the schema: template-kafka.yaml's MskClusterArn
// is "" by default, which its rule MskNeedsItsCluster refuses with
// KafkaSource msk. Without the rule, the same default is a problem.
func TestRegistryCheckSkipsValuesTheRulesRefuse(t *testing.T) {
	t.Parallel()
	const withoutRule = `
Parameters:
  Arn: {Type: String, Default: ""}
Resources:
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: f
      EventSourceArn: !Ref Arn
`
	res := checkTemplate(t, withoutRule)
	require.Len(t, res.Problems, 1)
	require.Contains(t, res.Problems[0].Error(), `Properties.EventSourceArn: Ref Arn: the parameter's Default : Properties.EventSourceArn: "" is shorter than 12 characters`)

	res = checkTemplate(t, withoutRule+`
Rules:
  NeedsArn:
    Assertions:
      - Assert: !Not [!Equals [!Ref Arn, ""]]
        AssertDescription: Arn is required.
`)
	require.Empty(t, res.Problems)
}
