package samtemplate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

const rulesTemplate = `
Parameters:
  Source: {Type: String, Default: msk, AllowedValues: [msk, self-managed]}
  ClusterArn: {Type: String, Default: ""}
  Secret: {Type: String, Default: ""}
Rules:
  MskNeedsItsCluster:
    RuleCondition: !Equals [!Ref Source, msk]
    Assertions:
      - Assert: !Not [!Equals [!Ref ClusterArn, ""]]
        AssertDescription: msk needs ClusterArn.
  SelfManagedNeedsItsSecret:
    RuleCondition: !Equals [!Ref Source, self-managed]
    Assertions:
      - Assert: !Not [!Equals [!Ref Secret, ""]]
  Always:
    Assertions:
      - Assert: !Or [!Equals [!Ref Source, msk], !Equals [!Ref Source, self-managed]]
Resources:
  R: {Type: AWS::SNS::Topic}
`

// A template's Rules refuse a deployment as CloudFormation does: each rule
// whose RuleCondition holds (or that has none) must have every Assert hold.
func TestRulesRefuseWhatCloudFormationRefuses(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(rulesTemplate))
	require.NoError(t, err)
	for _, c := range []struct {
		values map[string]string
		want   string // the refusing rule, "" for none
	}{
		{nil, "MskNeedsItsCluster"},
		{map[string]string{"ClusterArn": "arn:x"}, ""},
		{map[string]string{"Source": "self-managed"}, "SelfManagedNeedsItsSecret"},
		{map[string]string{"Source": "self-managed", "Secret": "arn:s"}, ""},
		{map[string]string{"Source": "self-managed", "Secret": "arn:s", "ClusterArn": ""}, ""},
		{map[string]string{"Source": "other", "ClusterArn": "arn:x"}, "Always"},
	} {
		refused, err := tpl.RefusedBy(deployedWith(tpl, c.values))
		require.NoError(t, err, "%v", c.values)
		require.Equal(t, c.want, refused, "%v", c.values)
	}

	none, err := samtemplate.Parse([]byte("Resources:\n  R: {Type: AWS::SNS::Topic}\n"))
	require.NoError(t, err)
	refused, err := none.RefusedBy(deployedWith(none, nil))
	require.NoError(t, err)
	require.Empty(t, refused, "no Rules, nothing refused")

	odd, err := samtemplate.Parse([]byte(`
Parameters:
  Subnets: {Type: CommaDelimitedList, Default: a}
Rules:
  Members:
    Assertions:
      - Assert: {"Fn::EachMemberIn": [{"Fn::ValueOfAll": [AWS::EC2::Subnet::Id, VpcId]}, [v]]}
Resources:
  R: {Type: AWS::SNS::Topic}
`))
	require.NoError(t, err)
	_, err = odd.RefusedBy(deployedWith(odd, nil))
	require.ErrorIs(t, err, samtemplate.ErrUnsupported, "a rule-only function cannot be decided here")
}

// Fn::Contains, the rule function template-kafka.yaml uses: a list
// parameter's value is split at commas and trimmed, as CloudFormation
// does, so an empty value is the list of one empty string.
func TestRulesDecideFnContains(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(`
Parameters:
  Make: {Type: String, Default: "true"}
  Tables: {Type: CommaDelimitedList, Default: ""}
Rules:
  EndpointsNeedTables:
    RuleCondition: !Equals [!Ref Make, "true"]
    Assertions:
      - Assert: !Not [{"Fn::Contains": [!Ref Tables, ""]}]
  Literal:
    Assertions:
      - Assert: {"Fn::Contains": [[a, b], b]}
Resources:
  R: {Type: AWS::SNS::Topic}
`))
	require.NoError(t, err)
	for _, c := range []struct {
		values map[string]string
		want   string
	}{
		{nil, "EndpointsNeedTables"},
		{map[string]string{"Tables": "rtb-1"}, ""},
		{map[string]string{"Tables": "rtb-1, rtb-2"}, ""},
		{map[string]string{"Tables": "rtb-1,"}, "EndpointsNeedTables"},
		{map[string]string{"Tables": "rtb-1, "}, "EndpointsNeedTables"},
		{map[string]string{"Make": "false"}, ""},
	} {
		refused, err := tpl.RefusedBy(deployedWith(tpl, c.values))
		require.NoError(t, err, "%v", c.values)
		require.Equal(t, c.want, refused, "%v", c.values)
	}

	str, err := samtemplate.Parse([]byte(`
Parameters:
  One: {Type: String, Default: ""}
Rules:
  R:
    Assertions:
      - Assert: {"Fn::Contains": [!Ref One, ""]}
Resources:
  R: {Type: AWS::SNS::Topic}
`))
	require.NoError(t, err)
	_, err = str.RefusedBy(deployedWith(str, nil))
	require.ErrorIs(t, err, samtemplate.ErrUnsupported, "a String parameter is no list")
}
