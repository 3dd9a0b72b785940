//go:build integration

package intake_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

type integrationBundle struct {
	ddb      *dynamodb.Client
	requests *awstest.Requests // DynamoDB requests, by operation
	s3       *s3.Client
	bucket   string
	table    string
	store    *jobs.DynamoStore
	handler  *intake.Handler
}

// setupIntegration creates a Jobs table (template.yaml's key schema: hash
// key job_id, S) and a candidates bucket of the test's own on the local
// stack, and a handler wired like functions/intake: the DynamoDB store and
// an S3 presign client.
func setupIntegration(t *testing.T) *integrationBundle {
	t.Helper()
	awstest.DynamoDB(t) // fails the test unless an endpoint is configured
	b := &integrationBundle{requests: &awstest.Requests{}, s3: awstest.S3(t), bucket: awstest.Name(t, "cand")}
	b.ddb = dynamodb.NewFromConfig(awstest.Config(t), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, b.requests.Count(""))
		// DynamoDB Local sends no X-Amz-Crc32 with error responses.
		o.DisableValidateResponseChecksum = true
	})
	ctx := t.Context()

	table := awstest.Name(t, "jobs")
	b.table = table
	_, err := b.ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("job_id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("job_id"), KeyType: ddbtypes.KeyTypeHash}},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := b.ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		require.NoError(t, err)
	})
	require.NoError(t, dynamodb.NewTableExistsWaiter(b.ddb).Wait(ctx,
		&dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second))

	in := &s3.CreateBucketInput{Bucket: aws.String(b.bucket)}
	if region := awstest.Config(t).Region; region != "us-east-1" {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}
	}
	_, err = b.s3.CreateBucket(ctx, in)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background() // t.Context() has ended by now
		out, err := b.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket)})
		if err != nil {
			t.Errorf("cleanup: list %s: %v", b.bucket, err)
			return
		}
		for _, obj := range out.Contents {
			if _, err := b.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: obj.Key}); err != nil {
				t.Errorf("cleanup: delete %s: %v", aws.ToString(obj.Key), err)
			}
		}
		if _, err := b.s3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b.bucket)}); err != nil {
			t.Errorf("cleanup: delete bucket %s: %v", b.bucket, err)
		}
	})

	b.store, err = jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.ddb, Table: table})
	require.NoError(t, err)
	presigner, err := intake.NewS3Presigner(intake.S3PresignerConfig{
		Client: b.s3, Presign: s3.NewPresignClient(b.s3), Bucket: b.bucket, EmulatorWithoutChecksums: true, // gofakes3
	})
	require.NoError(t, err)
	b.handler, err = intake.New(intake.Config{Store: b.store, Presigner: presigner, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	b.requests.Take()
	return b
}

func (b *integrationBundle) do(t *testing.T, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := b.handler.Handle(t.Context(), req)
	require.NoError(t, err)
	return resp
}

// fetch GETs a URL with a client of the test's own and returns the status
// and the body.
func fetch(t *testing.T, raw string) (int, []byte) {
	t.Helper()
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, raw, nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: transport, Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// TestIntegrationJobLifecycle drives the handler on DynamoDB Local and the
// S3 emulator: create (and its retry and conflict), get, a worker's claim,
// candidate and accept through the stores, then get again: the presigned
// URL it returns is served by the emulator with the candidate's bytes.
func TestIntegrationJobLifecycle(t *testing.T) {
	t.Parallel()
	b := setupIntegration(t)
	ctx := t.Context()
	const body = `{"spec":{"page_size":"50"}}`

	// Create, retry, conflict.
	resp := b.do(t, post("t-1", "export-intent-7", body))
	require.Equal(t, 202, resp.StatusCode, resp.Body)
	created := createdOf(t, resp)
	require.Equal(t, map[string]int{"TransactWriteItems": 1}, b.requests.Take())
	resp = b.do(t, post("t-1", "export-intent-7", body))
	require.Equal(t, 200, resp.StatusCode, resp.Body)
	require.Equal(t, created, createdOf(t, resp))
	b.requests.Take()
	resp = b.do(t, post("t-1", "export-intent-7", `{"spec":{"page_size":"10"}}`))
	require.Equal(t, 409, resp.StatusCode)
	require.Equal(t, intake.CodeIntentConflict, errorOf(t, resp).Code)
	b.requests.Take()

	// A refused request sends nothing to DynamoDB at all.
	resp = b.do(t, post("t-1", "export-intent-8", `{"spec":{"page_size":50}}`))
	require.Equal(t, 400, resp.StatusCode)
	require.Empty(t, b.requests.Take(), "a refused request sends no request")

	// Pending; invisible to another tenant, who cannot cancel it either.
	v := viewOf(t, b.do(t, get("t-1", created.JobID)))
	require.Equal(t, "pending", v.Status)
	before, err := b.store.Get(ctx, created.JobID)
	require.NoError(t, err)
	b.requests.Take()
	for _, req := range []func(string, string) events.APIGatewayV2HTTPRequest{get, del} {
		resp = b.do(t, req("t-2", created.JobID))
		require.Equal(t, 404, resp.StatusCode)
		require.Equal(t, intake.CodeJobNotFound, errorOf(t, resp).Code)
	}
	require.Equal(t, map[string]int{"GetItem": 2}, b.requests.Take(), "reads only")
	after, err := b.store.Get(ctx, created.JobID)
	require.NoError(t, err)
	require.Equal(t, before, after)

	// A worker claims, writes its candidate and is accepted.
	claimed, err := b.store.Claim(ctx, jobs.ClaimRequest{JobID: created.JobID, AttemptID: "worker-b", LeaseUntil: time.Now().Add(time.Minute)})
	require.NoError(t, err)
	key, err := candidate.NewKey(created.JobID, claimed.Generation, "worker-b", "json")
	require.NoError(t, err)
	content := `{"articles":120}`
	candidates, err := candidate.New(candidate.Config{Client: b.s3, Bucket: b.bucket})
	require.NoError(t, err)
	res, err := candidates.Put(ctx, key, strings.NewReader(content))
	require.NoError(t, err)
	_, err = b.store.Accept(ctx, jobs.AcceptRequest{JobID: created.JobID, AttemptID: "worker-b", Generation: claimed.Generation,
		Version: claimed.Version, Result: jobs.Result{Key: res.Key.String(), SHA256: res.SHA256, Size: res.Size}, Progress: 120})
	require.NoError(t, err)

	// Completed: the result and a URL the emulator serves.
	v = viewOf(t, b.do(t, get("t-1", created.JobID)))
	require.Equal(t, "completed", v.Status)
	require.Equal(t, int64(1), v.Generation)
	require.Equal(t, int64(120), v.Progress)
	require.Equal(t, &intake.ResultView{Key: key.String(), Size: int64(len(content)), SHA256: res.SHA256,
		URL: v.Result.URL, URLExpiresAt: v.Result.URLExpiresAt}, v.Result)
	u, err := url.Parse(v.Result.URL)
	require.NoError(t, err)
	require.Equal(t, "300", u.Query().Get("X-Amz-Expires"))
	require.True(t, strings.HasSuffix(u.Path, "/"+b.bucket+"/"+key.String()), "path-style URL of the key: %s", u.Path)
	status, got := fetch(t, v.Result.URL)
	require.Equal(t, http.StatusOK, status, "%s", got)
	require.Equal(t, content, string(got))

	// A completed job cannot be cancelled.
	resp = b.do(t, del("t-1", created.JobID))
	require.Equal(t, 409, resp.StatusCode)
	require.Equal(t, "completed", errorOf(t, resp).Status)

	// Another job is cancelled while pending.
	resp = b.do(t, post("t-1", "export-intent-9", `{}`))
	require.Equal(t, 202, resp.StatusCode, resp.Body)
	other := createdOf(t, resp).JobID
	v = viewOf(t, b.do(t, del("t-1", other)))
	require.Equal(t, "cancelled", v.Status)
	j, err := b.store.Get(ctx, other)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCancelled, j.Status)
	require.Equal(t, "t-1", j.Tenant)
}
