package samtemplate_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// thresholdProblem says what is wrong with a consumer's quarantine
// threshold, over every value the template's parameters allow: the
// threshold parameter (through the function's QUARANTINE_AFTER_RECEIVES)
// must park a message before the queue's redrive policy moves it to the
// DLQ (below maxReceiveCount, at its largest), and only after the receives
// the consumer's own recovery needs (at least least, at its smallest).
func thresholdProblem(tpl *samtemplate.Template, function, queue, param string, least int) string {
	fn, ok := tpl.Resources[function]
	if !ok {
		return function + " is missing"
	}
	vars, _ := fn.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	ref, ok := vars["QUARANTINE_AFTER_RECEIVES"].(map[string]any)
	if !ok || ref["Ref"] != param {
		return fmt.Sprintf("%s's QUARANTINE_AFTER_RECEIVES is not !Ref %s: %v", function, param, vars["QUARANTINE_AFTER_RECEIVES"])
	}
	p, ok := tpl.Parameters[param]
	if !ok || p.MinValue == nil || p.MaxValue == nil {
		return param + " needs a MinValue and a MaxValue"
	}
	lo, hi := toInt(p.MinValue), toInt(p.MaxValue)
	rp, _ := tpl.Resources[queue].Properties["RedrivePolicy"].(map[string]any)
	maxReceive := toInt(rp["maxReceiveCount"])
	switch {
	case hi >= maxReceive:
		return fmt.Sprintf("%s may be %d, not below %s's maxReceiveCount %d: the DLQ would take a message before it is parked", param, hi, queue, maxReceive)
	case lo < least:
		return fmt.Sprintf("%s may be %d, below %d: a message would be parked while its recovery still needs receives", param, lo, least)
	}
	return ""
}

func toInt(v any) int {
	var n int
	_, _ = fmt.Sscan(fmt.Sprint(v), &n)
	return n
}

func TestTemplateQuarantineThresholdsSitBetweenRecoveryAndTheDLQ(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	// A command needs MaxGenerations + 1 receives (the last takeover fails
	// the job); the threshold comes after them.
	require.Empty(t, thresholdProblem(tpl, "WorkerFunction", "CommandsQueue", "CommandsQuarantineAfterReceives", deployableMaxGenerations(t, tpl)+2))
	// The projector recovers an event at RecoverAfterReceives.
	recoverAfter := tpl.Parameters["RecoverAfterReceives"]
	require.NotNil(t, recoverAfter.MaxValue)
	require.Empty(t, thresholdProblem(tpl, "ProjectorFunction", "EventsQueue", "EventsQuarantineAfterReceives", toInt(recoverAfter.MaxValue)+1))

	// The check can fail, either way.
	loose, err := samtemplate.Parse([]byte(`
Parameters:
  Threshold: {Type: Number, Default: 6, MinValue: 2, MaxValue: 8}
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Environment: {Variables: {QUARANTINE_AFTER_RECEIVES: !Ref Threshold}}
  Q:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: {deadLetterTargetArn: x, maxReceiveCount: 8}
`))
	require.NoError(t, err)
	require.Contains(t, thresholdProblem(loose, "Fn", "Q", "Threshold", 2), "not below Q's maxReceiveCount 8")
	loose.Parameters["Threshold"] = samtemplate.Parameter{Type: "Number", MinValue: 2, MaxValue: 7}
	require.Empty(t, thresholdProblem(loose, "Fn", "Q", "Threshold", 2))
	require.Contains(t, thresholdProblem(loose, "Fn", "Q", "Threshold", 3), "may be 2, below 3")
	require.Contains(t, thresholdProblem(loose, "Fn", "Q", "Other", 3), "is not !Ref Other")
}

// A parked message is one item of the quarantine table, its body in S3
// when body and attributes are over 64 KiB but its attributes always in
// the item: the queues' messages must be capped so that an item stays
// under DynamoDB's 400 KB (and a lane of ten parked at once under a
// transaction's 4 MB).
func TestTemplateQueuesCapMessagesToWhatAQuarantineItemHolds(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	for _, q := range []string{"CommandsQueue", "EventsQueue"} {
		size, ok := tpl.Resources[q].Properties["MaximumMessageSize"]
		require.True(t, ok, "%s has no MaximumMessageSize: SQS allows up to 1 MiB, more than a quarantine item holds", q)
		require.LessOrEqual(t, toInt(size), 262144, q)
		require.Positive(t, toInt(size), q)
		require.Less(t, 10*toInt(size), 4_000_000, "%s: ten parked messages in one transaction", q)
	}
}
