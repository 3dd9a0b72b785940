package startup

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TRANSPORT is "sqs" when unset or empty, "kafka", or a problem naming
// the value; a problem reads as "", the transport of neither template.
func TestTransportReadsTheTemplatesTransport(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{"": TransportSQS, "sqs": TransportSQS, "kafka": TransportKafka, "Kafka": "", "msk": ""} {
		e := NewEnvFrom(map[string]string{"TRANSPORT": v})
		require.Equal(t, want, Transport(e), v)
		if want == "" {
			require.EqualError(t, e.Err(), `lambdawire: misconfigured function: TRANSPORT: "`+v+`" is neither sqs nor kafka`, v)
		} else {
			require.NoError(t, e.Err(), v)
		}
	}
	require.Equal(t, TransportSQS, Transport(NewEnvFrom(nil)), "unset")
}

// A TRANSPORT that is neither transport is one problem, not also the
// other transport's refusal.
func TestCheckTransportNamesAnUnknownTransportOnce(t *testing.T) {
	t.Parallel()
	for _, built := range []string{TransportSQS, TransportKafka} {
		e := NewEnvFrom(map[string]string{"TRANSPORT": "msk"})
		CheckTransport(e, built)
		require.EqualError(t, e.Err(), `lambdawire: misconfigured function: TRANSPORT: "msk" is neither sqs nor kafka`, built)
	}
}
