package pipeline

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// TestStreamConfigFollowsTheTemplate: the relay's stream mapping gets
// template.yaml's event source settings, BisectBatchOnFunctionError
// among them.
func TestStreamConfigFollowsTheTemplate(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	const (
		streamARN  = "arn:aws:dynamodb:eu-west-1:000000000000:table/jobs/stream/2026-01-01T00:00:00.000"
		failureARN = "arn:aws:sqs:eu-west-1:000000000000:stream-failures"
		failureURL = "http://127.0.0.1:1/000000000000/stream-failures"
	)
	p := &Pipeline{
		cfg: Config{
			Template:  tpl,
			StackName: "fw", Region: "eu-west-1",
			Logger: slog.New(slog.DiscardHandler),
			Deployed: &localdeploy.Result{
				Resources: map[string]string{"StreamFailureQueue": failureURL},
				Attributes: map[string]map[string]string{
					"JobsTable":          {"StreamArn": streamARN},
					"StreamFailureQueue": {"Arn": failureARN},
				},
			},
		},
		timeouts: map[string]time.Duration{"relay": 30 * time.Second},
	}
	evs, err := p.cfg.events("relay")
	require.NoError(t, err)
	var found bool
	for _, ev := range evs {
		if ev.typ != "DynamoDB" {
			continue
		}
		found = true
		raw := tpl.Resources["RelayFunction"].Properties["Events"].(map[string]any)[ev.name].(map[string]any)["Properties"].(map[string]any)
		require.Equal(t, true, raw["BisectBatchOnFunctionError"], "the template's relay mapping bisects (functions_template_test holds it to that)")

		sc, err := p.streamConfig("relay", ev, &sqs.Client{})
		require.NoError(t, err)
		// The caller adds the client and the invoker; the rest must be valid.
		sc.Client, sc.Invoker = &dynamodbstreams.Client{}, localesm.Func(func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil })
		require.NoError(t, sc.Validate())
		require.Equal(t, streamARN, sc.StreamARN)
		require.True(t, sc.BisectBatchOnFunctionError, "BisectBatchOnFunctionError does not reach the mapping")
		require.True(t, sc.ReportBatchItemFailures)
		require.NotNil(t, sc.MaximumRetryAttempts)
		require.Equal(t, raw["MaximumRetryAttempts"], *sc.MaximumRetryAttempts)
		require.NotNil(t, sc.OnFailure)
		require.Equal(t, failureURL, sc.OnFailure.QueueURL)
	}
	require.True(t, found, "the relay has no DynamoDB event")
}

func TestBoolProp(t *testing.T) {
	t.Parallel()
	props := map[string]any{"a": true, "b": "true", "c": false, "d": "false", "e": "yes"}
	require.True(t, boolProp(props, "a"))
	require.True(t, boolProp(props, "b"))
	require.False(t, boolProp(props, "c"))
	require.False(t, boolProp(props, "d"))
	require.False(t, boolProp(props, "e"))
	require.False(t, boolProp(props, "missing"))
}
