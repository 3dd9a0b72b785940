package cfnschema_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/cfnschema"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// testSchema exercises the keywords the validator applies, in the shape of
// a registry schema.
const testSchema = `{
  "typeName": "Test::Thing::Widget",
  "additionalProperties": false,
  "required": ["Name"],
  "readOnlyProperties": ["/properties/Arn", "/properties/Nested/Id"],
  "definitions": {
    "Target": {
      "type": "object",
      "additionalProperties": false,
      "properties": {"Arn": {"type": "string"}, "Id": {"type": "string"}},
      "oneOf": [{"required": ["Arn"]}, {"required": ["Id"]}]
    },
    "Rule": {
      "type": "object",
      "additionalProperties": false,
      "properties": {"Rules": {"type": "array", "items": {"$ref": "#/definitions/Rule"}}, "Name": {"type": "string"}}
    }
  },
  "properties": {
    "Arn": {"type": "string"},
    "Name": {"type": "string", "minLength": 1, "maxLength": 5},
    "Size": {"type": "integer", "minimum": 1, "maximum": 10},
    "Ratio": {"type": "number"},
    "On": {"type": "boolean"},
    "Policy": {"type": ["object", "string"]},
    "Kind": {"type": "string", "enum": ["a", "b"]},
    "Target": {"$ref": "#/definitions/Target"},
    "Alias": {"$ref": "#/properties/Name"},
    "Labels": {"type": "object", "additionalProperties": false, "patternProperties": {"^[a-z]+$": {"type": "string"}}},
    "Ports": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "integer"}},
    "Choice": {"anyOf": [{"type": "integer"}, {"type": "array"}]},
    "Rule": {"$ref": "#/definitions/Rule"},
    "Nested": {"type": "object", "properties": {"Id": {"type": "string"}}}
  }
}`

func validate(t *testing.T, props string) []string {
	t.Helper()
	s, err := cfnschema.ParseResourceSchema([]byte(testSchema))
	require.NoError(t, err)
	tpl, err := samtemplate.Parse([]byte("Parameters:\n  Five:\n    Type: Number\n    Default: 5\nResources:\n  W:\n    Type: Test::Thing::Widget\n    Properties:\n" + props))
	require.NoError(t, err)
	var out []string
	for _, err := range s.Validate(tpl.Resources["W"].Properties, tpl.Parameters) {
		out = append(out, err.Error())
	}
	return out
}

func TestValidateAcceptsWhatTheSchemaAllows(t *testing.T) {
	t.Parallel()
	for _, props := range []string{
		"      Name: abc\n",
		"      Name: 12345\n",                      // a number for a string: CloudFormation passes "12345"
		"      Name: abc\n      Size: \"7\"\n",     // a numeric string for an integer
		"      Name: abc\n      Size: !Ref Five\n", // a parameter whose values are within range
		"      Name: abc\n      On: \"false\"\n",
		"      Name: abc\n      Ratio: 0.5\n",
		"      Name: abc\n      Policy: {Version: x}\n",
		"      Name: abc\n      Policy: '{\"Version\": \"x\"}'\n",
		"      Name: abc\n      Kind: b\n",
		"      Name: abc\n      Target: {Arn: x}\n",
		"      Name: abc\n      Target: {Id: !GetAtt X.Id}\n",
		"      Name: abc\n      Target: {Arn: !Ref X, Id: !Ref AWS::NoValue}\n", // oneOf with intrinsics: not known to match twice
		"      Alias: ab\n      Name: abc\n",
		"      Name: abc\n      Labels: {team: x, env: y}\n",
		"      Name: abc\n      Ports: [80, !Ref Port]\n",
		"      Name: abc\n      Ports: !Split [',', !Ref Ports]\n",
		"      Name: abc\n      Choice: [1]\n",
		"      Name: abc\n      Rule: {Rules: [{Rules: [{Name: deep}]}]}\n",
		"      Name: !Sub '${AWS::StackName}'\n      Nested: {Other: 1}\n",
		"      Name: !If [C, abc, !Ref AWS::NoValue]\n",
	} {
		require.Empty(t, validate(t, props), "%s", props)
	}
}

func TestValidateRejectsWhatTheSchemaForbids(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"      Size: 3\n":                                               "Properties: missing required property Name",
		"      Name: abcdef\n":                                          `Properties.Name: "abcdef" is longer than 5 characters`,
		"      Name: \"\"\n":                                            `Properties.Name: "" is shorter than 1 characters`,
		"      Name: a\n      Size: 11\n":                               "Properties.Size: 11 is above the maximum 10",
		"      Name: a\n      Size: 0\n":                                "Properties.Size: 0 is below the minimum 1",
		"      Name: a\n      Size: 1.5\n":                              "Properties.Size: 1.5 is not of type integer",
		"      Name: a\n      Size: ten\n":                              `Properties.Size: "ten" is not of type integer`,
		"      Name: a\n      On: yes please\n":                         `Properties.On: "yes please" is not of type boolean`,
		"      Name: a\n      Policy: [x]\n":                            "Properties.Policy: a list is not of type object or string",
		"      Name: a\n      Kind: c\n":                                `Properties.Kind: "c" is not one of [a, b]`,
		"      Name: a\n      Target: {Arn: x, Id: y}\n":                "Properties.Target: matches 2 of the alternatives of oneOf, not exactly one",
		"      Name: a\n      Target: {}\n":                             "Properties.Target: matches none of the 2 alternatives of oneOf",
		"      Name: a\n      Target: {Arn: x, Url: y}\n":               "Properties.Target.Url: unknown property",
		"      Name: a\n      Alias: abcdef\n":                          `Properties.Alias: "abcdef" is longer than 5 characters`,
		"      Name: a\n      Labels: {Team: x}\n":                      "Properties.Labels.Team: unknown property",
		"      Name: a\n      Labels: {team: [x]}\n":                    "Properties.Labels.team: a list is not of type string",
		"      Name: a\n      Ports: []\n":                              "Properties.Ports: has 0 items, fewer than 1",
		"      Name: a\n      Ports: [1, 2, 3]\n":                       "Properties.Ports: has 3 items, more than 2",
		"      Name: a\n      Ports: [http]\n":                          `Properties.Ports[0]: "http" is not of type integer`,
		"      Name: a\n      Choice: x\n":                              "Properties.Choice: matches none of the 2 alternatives of anyOf",
		"      Name: a\n      Rule: {Rules: [{Rulez: []}]}\n":           "Properties.Rule.Rules[0].Rulez: unknown property",
		"      Name: a\n      Arn: x\n":                                 "Properties.Arn: is read-only",
		"      Name: a\n      Nested: {Id: x}\n":                        "Properties.Nested.Id: is read-only",
		"      Name: a\n      Size: !If [C, 12, 3]\n":                   "Properties.Size(Fn::If branch 1): 12 is above the maximum 10",
		"      Name: a\n      Size: !Ref Five\n      Kind: !Ref Five\n": `Properties.Kind: Ref Five: the parameter's Default 5: Properties.Kind: 5 is not one of [a, b]`,
		"      Name: a\n      Colour: red\n":                            "Properties.Colour: unknown property (not in the schema of Test::Thing::Widget)",
	}
	for props, want := range cases {
		got := validate(t, props)
		require.Len(t, got, 1, "%s: %q", props, got)
		require.True(t, strings.HasPrefix(got[0], want), "%s:\n got %s\nwant %s...", props, got[0], want)
	}
}
