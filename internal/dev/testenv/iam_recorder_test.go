package testenv

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// NewIAMRecorder refuses names it could only record wrongly: an ARN that
// is not one (the resource every policy would be matched against), a
// table without its partition key (dynamodb:LeadingKeys).
func TestNewIAMRecorderRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	const tableARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/jobs"
	good := func() IAMNames {
		return IAMNames{
			Tables:  map[string]IAMTable{"jobs": {ARN: tableARN, Hash: "job_id"}},
			Queues:  map[string]string{"q.fifo": "arn:aws:sqs:eu-west-1:123456789012:q.fifo"},
			Buckets: map[string]string{"b": "arn:aws:s3:::b"},
		}
	}
	for name, tc := range map[string]struct {
		edit  func(*IAMNames)
		field string
	}{
		"table ARN":       {func(n *IAMNames) { n.Tables["jobs"] = IAMTable{ARN: "table", Hash: "job_id"} }, `Names.Tables["jobs"].ARN`},
		"empty table ARN": {func(n *IAMNames) { n.Tables["jobs"] = IAMTable{Hash: "job_id"} }, `Names.Tables["jobs"].ARN`},
		"table key":       {func(n *IAMNames) { n.Tables["jobs"] = IAMTable{ARN: tableARN} }, `Names.Tables["jobs"].Hash`},
		"queue ARN":       {func(n *IAMNames) { n.Queues["q.fifo"] = "q.fifo" }, `Names.Queues["q.fifo"]`},
		"bucket ARN":      {func(n *IAMNames) { n.Buckets["b"] = "" }, `Names.Buckets["b"]`},
		"bucket ARN, cut": {func(n *IAMNames) { n.Buckets["b"] = "arn" }, `Names.Buckets["b"]`},
	} {
		names := good()
		tc.edit(&names)
		r, err := NewIAMRecorder(IAMRecorderConfig{Names: names})
		require.ErrorIs(t, err, ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
		require.Nil(t, r, name)
	}
	r, err := NewIAMRecorder(IAMRecorderConfig{Names: good()})
	require.NoError(t, err)
	require.NotNil(t, r)
	r, err = NewIAMRecorder(IAMRecorderConfig{})
	require.NoError(t, err, "no names: every request is recorded as unknown")
	require.NotNil(t, r)
}
