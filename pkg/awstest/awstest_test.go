package awstest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
)

func TestNamesAreUniqueAndValid(t *testing.T) {
	t.Parallel()
	a, b := awstest.Name(t, "Queue_X"), awstest.Name(t, "Queue_X")
	require.NotEqual(t, a, b)
	require.Regexp(t, `^queue-x-testnamesareuniqueandvalid-[0-9a-f]{8}$`, a)
}

// A long prefix and test name are cut so that the name is 48 characters at
// most (39 of them, then "-" and 8 hex digits), with no dash left at the
// cut.
func TestNamesAreCutTo48Characters(t *testing.T) {
	t.Parallel()
	long := awstest.Name(t, strings.Repeat("a", 60))
	require.Len(t, long, 48)
	require.Regexp(t, `^a{39}-[0-9a-f]{8}$`, long)
	// The 39th character is a dash: it is trimmed, and the name is shorter.
	dashed := awstest.Name(t, strings.Repeat("b", 38)+"-c")
	require.Regexp(t, `^b{38}-[0-9a-f]{8}$`, dashed)

	// At the bound: prefix, dash and test name of 39 characters are kept
	// whole; of 40, the last is cut.
	name := strings.ToLower(t.Name())
	whole := awstest.Name(t, strings.Repeat("c", 38-len(name)))
	require.Regexp(t, `^c+-`+name+`-[0-9a-f]{8}$`, whole)
	require.Len(t, whole, 48)
	cut := awstest.Name(t, strings.Repeat("c", 39-len(name)))
	require.Regexp(t, `^c+-`+name[:len(name)-1]+`-[0-9a-f]{8}$`, cut)
	require.Len(t, cut, 48)
}

// recorder is a testing.TB that records a Fatalf instead of ending the
// test, to see what RequireEndpoint says.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

// Without AWS_ENDPOINT_URL and the service's own variable, a client is
// refused with both variables named; either one is enough.
func TestRequireEndpointNamesTheVariablesToSet(t *testing.T) {
	for service, variable := range map[string]string{
		sqs.ServiceID:             "AWS_ENDPOINT_URL_SQS",
		dynamodb.ServiceID:        "AWS_ENDPOINT_URL_DYNAMODB",
		dynamodbstreams.ServiceID: "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
		s3.ServiceID:              "AWS_ENDPOINT_URL_S3",
	} {
		t.Run(service, func(t *testing.T) {
			for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "AWS_ENDPOINT_URL_S3"} {
				t.Setenv(v, "")
			}
			r := &recorder{TB: t}
			awstest.RequireEndpoint(r, service)
			require.Contains(t, r.fatal, "needs a "+service+" endpoint")
			require.Contains(t, r.fatal, "neither AWS_ENDPOINT_URL nor "+variable+" is set")

			for _, set := range []string{variable, "AWS_ENDPOINT_URL"} {
				t.Setenv(set, "http://127.0.0.1:1")
				r := &recorder{TB: t}
				awstest.RequireEndpoint(r, service)
				require.Empty(t, r.fatal, "%s is set", set)
				t.Setenv(set, "")
			}
		})
	}
}

// fakeDynamo is a DynamoDB endpoint on 127.0.0.1 that answers every request
// with an empty JSON object and counts what it received.
func fakeDynamo(t *testing.T) (*dynamodb.Client, *atomic.Int32) {
	t.Helper()
	var received atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		received.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	return dynamodb.NewFromConfig(aws.Config{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  srv.Client(),
	}, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true }), &received
}

// A lost answer reached the service (the request was applied), fails the
// attempt as retryable, and the SDK's retry is a second request, which
// the counter counts again; only the armed operation's next request is
// lost, and only once.
func TestALostResponseIsAppliedRetriedAndCountedTwice(t *testing.T) {
	t.Parallel()
	counter, faults := &awstest.Requests{}, &awstest.LostResponses{}
	client, received := fakeDynamo(t)
	opts := func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, counter.Count("ddb."), faults.Install) }

	faults.Arm("DescribeLimits")
	_, err := client.ListTables(t.Context(), &dynamodb.ListTablesInput{}, opts)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"ddb.ListTables": 1}, counter.Take(), "another operation is not lost")
	require.Equal(t, int32(0), faults.Fired())

	_, err = client.DescribeLimits(t.Context(), &dynamodb.DescribeLimitsInput{}, opts)
	require.NoError(t, err, "the SDK retries a lost answer")
	require.Equal(t, int32(1), faults.Fired())
	require.Equal(t, map[string]int{"ddb.DescribeLimits": 2}, counter.Take())
	require.Equal(t, int32(3), received.Load(), "the lost answer's request reached the service")

	_, err = client.DescribeLimits(t.Context(), &dynamodb.DescribeLimitsInput{}, opts)
	require.NoError(t, err)
	require.Equal(t, int32(1), faults.Fired(), "disarmed once fired")
	require.Equal(t, map[string]int{"ddb.DescribeLimits": 1}, counter.Take())
	require.Equal(t, map[string]int{}, counter.Take(), "Take starts again from zero")
}
