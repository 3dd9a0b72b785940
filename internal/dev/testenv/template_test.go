package testenv

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

const partTemplate = `
Parameters:
  UseKey: {Type: String, Default: "no", AllowedValues: ["yes", "no"]}
Conditions:
  Keyed: !Equals [!Ref UseKey, "yes"]
Mappings:
  Sizes: {small: {mb: 128}}
Globals:
  Function: {Timeout: 3}
Resources:
  R:
    Type: AWS::SNS::Topic
    Condition: Keyed
  Q:
    Type: AWS::SQS::Queue
`

// A part of a template keeps what its resources' values refer to besides
// other resources, and names no resource the template lacks.
func TestOnlyKeepsWhatTheResourcesReferTo(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(partTemplate))
	require.NoError(t, err)
	only, err := Only(tpl, "R")
	require.NoError(t, err)
	require.Equal(t, map[string]samtemplate.Resource{"R": tpl.Resources["R"]}, only.Resources)
	require.Equal(t, tpl.Parameters, only.Parameters)
	require.Equal(t, tpl.Conditions, only.Conditions)
	require.Equal(t, tpl.Mappings, only.Mappings)
	require.Equal(t, tpl.Globals, only.Globals)
	require.Len(t, tpl.Resources, 2, "the template keeps its resources")
	_, err = Only(tpl, "R", "Nope")
	require.ErrorContains(t, err, "declares no Nope")
}
