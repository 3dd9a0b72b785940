package lambdawire

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/stretchr/testify/require"
)

// The DatabaseSchema samples in events/ are requests as CloudFormation
// sends them (its custom resource request types pages, checked
// 2026-12-02): a Create carries no PhysicalResourceId, an Update and a
// Delete the one the Create answered, and only an Update the
// OldResourceProperties. Their ResponseURL is a presigned S3 URL (SigV4
// query parameters) that S3 would take as presigned: the date of its
// credential's scope is X-Amz-Date's day, and the scope's region the
// stack's.
func TestTheSchemaSamplesAreRequestsAsCloudFormationSendsThem(t *testing.T) {
	t.Parallel()
	for rt, name := range map[cfn.RequestType]string{
		cfn.RequestCreate: "cfn-schema-create.json", cfn.RequestUpdate: "cfn-schema-update.json", cfn.RequestDelete: "cfn-schema-delete.json",
	} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
		require.NoError(t, err)
		var ev cfn.Event
		require.NoError(t, json.Unmarshal(raw, &ev), name)
		require.Equal(t, rt, ev.RequestType, name)
		require.Equal(t, "Custom::FifoworkerSchema", ev.ResourceType, name)
		require.Equal(t, "DatabaseSchema", ev.LogicalResourceID, name)
		require.Equal(t, rt != cfn.RequestCreate, ev.PhysicalResourceID == SchemaResourceID, "%s: PhysicalResourceId %q", name, ev.PhysicalResourceID)
		require.Equal(t, rt == cfn.RequestUpdate, ev.OldResourceProperties != nil, "%s: OldResourceProperties", name)
		require.NotEmpty(t, ev.ResourceProperties["ServiceToken"], name)

		u, err := url.Parse(ev.ResponseURL)
		require.NoError(t, err, name)
		require.Equal(t, "https", u.Scheme, name)
		q := u.Query()
		require.Equal(t, "AWS4-HMAC-SHA256", q.Get("X-Amz-Algorithm"), name)
		require.Equal(t, "host", q.Get("X-Amz-SignedHeaders"), name)
		date := q.Get("X-Amz-Date")
		require.Len(t, date, len("20060102T150405Z"), "%s: X-Amz-Date %q", name, date)
		scope := strings.Split(q.Get("X-Amz-Credential"), "/") // key/date/region/service/aws4_request
		require.Len(t, scope, 5, "%s: X-Amz-Credential %q", name, q.Get("X-Amz-Credential"))
		require.Equal(t, date[:8], scope[1], "%s: the credential's scope date is X-Amz-Date's day, or S3 refuses the URL", name)
		stackRegion := strings.Split(ev.StackID, ":")[3]
		require.Equal(t, []string{stackRegion, "s3", "aws4_request"}, scope[2:], name)
		require.Contains(t, u.Path, url.PathEscape(ev.RequestID), "%s: the response object names the request", name)
	}
}
