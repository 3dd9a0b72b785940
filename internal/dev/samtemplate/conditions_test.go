package samtemplate_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// deployedWith is a RefFunc for a deployment of tpl that gives the
// parameters in values and leaves the others at their defaults; a
// parameter with neither is an error, as CloudFormation refuses it.
func deployedWith(tpl *samtemplate.Template, values map[string]string) samtemplate.RefFunc {
	return func(name string) (string, error) {
		if v, ok := values[name]; ok {
			return v, nil
		}
		if name == "AWS::Region" {
			return "eu-west-1", nil
		}
		p, ok := tpl.Parameters[name]
		if !ok || p.Default == nil {
			return "", fmt.Errorf("no value for %s", name)
		}
		return fmt.Sprint(p.Default), nil
	}
}

// chosen is v as a deployment with values sees it: Fn::If decided.
func chosen(t *testing.T, tpl *samtemplate.Template, values map[string]string, v any) any {
	t.Helper()
	out, present, err := tpl.Choose(v, deployedWith(tpl, values))
	require.NoError(t, err)
	if !present {
		return nil
	}
	return out
}

// exists reports whether a deployment with values creates the resource.
func exists(t *testing.T, tpl *samtemplate.Template, values map[string]string, logicalID string) bool {
	t.Helper()
	ok, err := tpl.Exists(logicalID, deployedWith(tpl, values))
	require.NoError(t, err)
	return ok
}

const conditionsTemplate = `
Parameters:
  Arn: {Type: String, Default: ""}
  Size: {Type: Number, Default: 60}
Mappings:
  Sizes:
    "60": {Double: 120}
    "7": {Double: 14}
Conditions:
  NoArn: !Equals [!Ref Arn, ""]
  HasArn: !Not [!Condition NoArn]
  Big: !Equals [!FindInMap [Sizes, !Ref Size, Double], 120]
  Both: !And [!Condition HasArn, !Condition Big]
  Either: !Or [!Condition HasArn, !Condition Big]
  Loop: !Condition Loop
  Odd: !Equals [!GetAtt R.Arn, x]
Resources:
  R:
    Type: AWS::SNS::Topic
    Condition: NoArn
    Properties:
      A: !If [NoArn, !Ref R, !Ref Arn]
      B: [1, !Ref AWS::NoValue, !If [Big, 2, !Ref AWS::NoValue]]
      C: !If [HasArn, x, !Ref AWS::NoValue]
  S:
    Type: AWS::SNS::Topic
`

func TestConditionsAreDecidedAsCloudFormationDecidesThem(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(conditionsTemplate))
	require.NoError(t, err)
	for _, c := range []struct {
		values map[string]string
		want   map[string]bool
	}{
		{nil, map[string]bool{"NoArn": true, "HasArn": false, "Big": true, "Both": false, "Either": true}},
		{map[string]string{"Arn": "arn:x", "Size": "7"}, map[string]bool{"NoArn": false, "HasArn": true, "Big": false, "Both": false, "Either": true}},
		{map[string]string{"Arn": "arn:x"}, map[string]bool{"NoArn": false, "HasArn": true, "Big": true, "Both": true, "Either": true}},
		{map[string]string{"Size": "7"}, map[string]bool{"NoArn": true, "HasArn": false, "Big": false, "Both": false, "Either": false}},
	} {
		for name, want := range c.want {
			got, err := tpl.Holds(name, deployedWith(tpl, c.values))
			require.NoError(t, err, name)
			require.Equal(t, want, got, "%s with %v", name, c.values)
		}
	}

	props := tpl.Resources["R"].Properties
	require.Equal(t, map[string]any{"A": map[string]any{"Ref": "R"}, "B": []any{1, 2}},
		chosen(t, tpl, nil, props), "AWS::NoValue drops a list's item and a mapping's key")
	require.Equal(t, map[string]any{"A": map[string]any{"Ref": "Arn"}, "B": []any{1}, "C": "x"},
		chosen(t, tpl, map[string]string{"Arn": "arn:x", "Size": "7"}, props))
	require.True(t, exists(t, tpl, nil, "R"))
	require.False(t, exists(t, tpl, map[string]string{"Arn": "arn:x"}, "R"))
	require.True(t, exists(t, tpl, map[string]string{"Arn": "arn:x"}, "S"), "no Condition: always")

	_, err = tpl.Holds("Loop", deployedWith(tpl, nil))
	require.ErrorContains(t, err, "a cycle?")
	_, err = tpl.Holds("Odd", deployedWith(tpl, nil))
	require.ErrorIs(t, err, samtemplate.ErrUnsupported)
	_, err = tpl.Holds("Missing", deployedWith(tpl, nil))
	require.ErrorContains(t, err, "no condition Missing")
	_, err = tpl.Holds("Big", deployedWith(tpl, map[string]string{"Size": "8"}))
	require.ErrorContains(t, err, `mapping Sizes has no key "8"`)
	_, err = tpl.FindInMap("Sizes", "60", "Triple")
	require.ErrorContains(t, err, `mapping Sizes.60 has no key "Triple"`)
	_, err = tpl.FindInMap("Nope", "60", "Double")
	require.ErrorContains(t, err, "no mapping Nope")
	got, err := tpl.FindInMap("Sizes", "7", "Double")
	require.NoError(t, err)
	require.Equal(t, 14, got)
	_, _, err = tpl.Choose(map[string]any{"Fn::If": []any{"NoArn", 1}}, deployedWith(tpl, nil))
	require.ErrorContains(t, err, "Fn::If takes [condition, then, else]")
}
