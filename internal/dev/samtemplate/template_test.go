package samtemplate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

func TestParseTurnsShortTagsIntoLongForms(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(`
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub "${AWS::StackName}-q.fifo"
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt D.Arn
      Tags:
        - Key: k
          Value: !Join ["-", [a, !Ref B]]
`))
	require.NoError(t, err)
	p := tpl.Resources["Q"].Properties
	require.Equal(t, map[string]any{"Fn::Sub": "${AWS::StackName}-q.fifo"}, p["QueueName"])
	require.Equal(t, map[string]any{"Fn::GetAtt": []any{"D", "Arn"}}, p["RedrivePolicy"].(map[string]any)["deadLetterTargetArn"])
	tag := p["Tags"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"Fn::Join": []any{"-", []any{"a", map[string]any{"Ref": "B"}}}}, tag["Value"])
}

func TestParseRejectsWhatItCannotRead(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"unknown tag":        "Resources:\n  Q:\n    Type: X\n    Properties:\n      A: !Frobnicate x\n",
		"GetAtt without dot": "Resources:\n  Q:\n    Type: X\n    Properties:\n      A: !GetAtt Nope\n",
		"no resources":       "Description: x\n",
		"resource sans type": "Resources:\n  Q:\n    Properties: {}\n",
		"not yaml":           "Resources: [\n",
	} {
		_, err := samtemplate.Parse([]byte(src))
		require.Error(t, err, name)
	}
}

func TestParseRefusesRecursiveAndExplodingAliases(t *testing.T) {
	t.Parallel()
	_, err := samtemplate.Parse([]byte("a: &x [*x]\n"))
	require.ErrorContains(t, err, "recursive alias")

	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	_, err = samtemplate.Parse([]byte(b.String()))
	require.ErrorContains(t, err, "once aliases are expanded")
}
