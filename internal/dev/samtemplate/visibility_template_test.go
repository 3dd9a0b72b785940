package samtemplate_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// deployableValues are the values a deployment may give a Number
// parameter: its AllowedValues, or every integer from MinValue to
// MaxValue.
func deployableValues(t *testing.T, p samtemplate.Parameter) []int {
	t.Helper()
	var out []int
	if len(p.AllowedValues) > 0 {
		for _, v := range p.AllowedValues {
			out = append(out, toInt(v))
		}
		return out
	}
	require.NotNil(t, p.MinValue, "a Number parameter bounded or listed")
	require.NotNil(t, p.MaxValue, "a Number parameter bounded or listed")
	for v := toInt(p.MinValue); v <= toInt(p.MaxValue); v++ {
		out = append(out, v)
	}
	return out
}

// scalarWith is v's number as a deployment with values sees it.
func scalarWith(t *testing.T, tpl *samtemplate.Template, values map[string]string, v any) int {
	t.Helper()
	s, err := tpl.Scalar(v, deployedWith(tpl, values))
	require.NoError(t, err)
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "%v gives %q", v, s)
	return n
}

// visibilityProblem says where the commands queue's visibility timeout
// falls below AWS's six times the worker's timeout (or above SQS's 12
// hours), for every WorkerTimeout a deployment may set: CloudFormation
// cannot multiply, so the template must derive one from the other.
func visibilityProblem(t *testing.T, tpl *samtemplate.Template) string {
	t.Helper()
	globals, _ := tpl.Globals["Function"].(map[string]any)
	if fmt.Sprint(globals["Timeout"]) != fmt.Sprint(ref("WorkerTimeout")) {
		return fmt.Sprintf("the functions' default timeout is %v, not WorkerTimeout", globals["Timeout"])
	}
	if _, own := tpl.Resources["WorkerFunction"].Properties["Timeout"]; own {
		return "the worker has a timeout of its own, not WorkerTimeout"
	}
	vis := tpl.Resources["CommandsQueue"].Properties["VisibilityTimeout"]
	for _, timeout := range deployableValues(t, tpl.Parameters["WorkerTimeout"]) {
		got := scalarWith(t, tpl, map[string]string{"WorkerTimeout": strconv.Itoa(timeout)}, vis)
		switch {
		case got < 6*timeout:
			return fmt.Sprintf("WorkerTimeout %d: the commands queue's visibility %d is below 6 x %d", timeout, got, timeout)
		case got > 43200:
			return fmt.Sprintf("WorkerTimeout %d: the commands queue's visibility %d is above SQS's 43200", timeout, got)
		}
	}
	return ""
}

func TestTemplateCommandsVisibilityIsSixTimesEveryAllowedWorkerTimeout(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	require.Empty(t, visibilityProblem(t, tpl))

	p := tpl.Parameters["WorkerTimeout"]
	require.Equal(t, 60, toInt(p.Default))
	allowed := deployableValues(t, p)
	require.Contains(t, allowed, demo.WorkerTimeout, "the demo's timeout")
	require.Equal(t, demo.Visibility, scalarWith(t, tpl, map[string]string{"WorkerTimeout": strconv.Itoa(demo.WorkerTimeout)},
		tpl.Resources["CommandsQueue"].Properties["VisibilityTimeout"]), "the demo's visibility")
	require.Contains(t, allowed, 3, "the takeover tests' timeout")
	require.Contains(t, allowed, 900, "Lambda's longest")
	require.Len(t, tpl.Mappings["WorkerTimeouts"], len(allowed), "a row for each allowed timeout, and no other")

	// The check can fail: a visibility that is a parameter of its own, and
	// a row of the mapping one second short.
	free, err := samtemplate.Parse([]byte(`
Parameters:
  WorkerTimeout: {Type: Number, Default: 60, MinValue: 3, MaxValue: 900}
  Visibility: {Type: Number, Default: 360}
Globals:
  Function: {Timeout: !Ref WorkerTimeout}
Resources:
  WorkerFunction: {Type: AWS::Serverless::Function}
  CommandsQueue:
    Type: AWS::SQS::Queue
    Properties: {VisibilityTimeout: !Ref Visibility}
`))
	require.NoError(t, err)
	require.Equal(t, "WorkerTimeout 61: the commands queue's visibility 360 is below 6 x 61", visibilityProblem(t, free))
	short, err := samtemplate.Parse([]byte(`
Parameters:
  WorkerTimeout: {Type: Number, Default: 60, AllowedValues: [6, 60]}
Mappings:
  WorkerTimeouts:
    "6": {CommandsVisibility: 36}
    "60": {CommandsVisibility: 359}
Globals:
  Function: {Timeout: !Ref WorkerTimeout}
Resources:
  WorkerFunction: {Type: AWS::Serverless::Function}
  CommandsQueue:
    Type: AWS::SQS::Queue
    Properties: {VisibilityTimeout: !FindInMap [WorkerTimeouts, !Ref WorkerTimeout, CommandsVisibility]}
`))
	require.NoError(t, err)
	require.Equal(t, "WorkerTimeout 60: the commands queue's visibility 359 is below 6 x 60", visibilityProblem(t, short))
	short.Mappings["WorkerTimeouts"].(map[string]any)["60"] = map[string]any{"CommandsVisibility": 360}
	require.Empty(t, visibilityProblem(t, short), "exactly 6 x is enough")
	short.Mappings["WorkerTimeouts"].(map[string]any)["60"] = map[string]any{"CommandsVisibility": 43201}
	require.Contains(t, visibilityProblem(t, short), "above SQS's 43200")
}
