package nudge_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"
)

// roundTripper answers every request 202 and records its URL.
type roundTripper struct{ urls []string }

func (r *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r.urls = append(r.urls, req.URL.String())
	return &http.Response{StatusCode: http.StatusAccepted, Status: "202 Accepted", Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// Without an Endpoint, a nudge goes to the region's Lambda API: its
// partition's domain, amazonaws.com.cn in the China regions (the endpoint
// domain of Beijing and Ningxia, as AWS's China endpoint lists give it),
// amazonaws.com elsewhere (GovCloud included).
func TestLambdaDefaultsToTheRegionsEndpoint(t *testing.T) {
	t.Parallel()
	for region, want := range map[string]string{
		"eu-west-1":      "https://lambda.eu-west-1.amazonaws.com/2015-03-31/functions/relay/invocations",
		"us-gov-west-1":  "https://lambda.us-gov-west-1.amazonaws.com/2015-03-31/functions/relay/invocations",
		"cn-north-1":     "https://lambda.cn-north-1.amazonaws.com.cn/2015-03-31/functions/relay/invocations",
		"cn-northwest-1": "https://lambda.cn-northwest-1.amazonaws.com.cn/2015-03-31/functions/relay/invocations",
	} {
		rt := &roundTripper{}
		l, err := nudge.NewLambda(nudge.LambdaConfig{Function: "relay", Region: region, Credentials: creds,
			HTTPClient: &http.Client{Transport: rt}})
		require.NoError(t, err)
		require.NoError(t, l.Send(t.Context(), nudge.Payload{Type: nudge.PayloadType, FirstCommit: time.Now(), Commits: 1}))
		require.Equal(t, []string{want}, rt.urls, region)
	}
}
