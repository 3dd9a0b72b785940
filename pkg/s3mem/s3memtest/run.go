package s3memtest

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

// API is the part of the S3 client the suite calls, with the SDK's
// signatures: *s3.Client has it, and so do s3mem.S3 and s3mem.FaultyS3.
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ API = (*s3.Client)(nil)

// Bucket is an empty bucket for one test and the client to reach it with.
type Bucket struct {
	// Client is the S3 under test.
	Client API
	// Name is the bucket's name: a bucket that holds nothing yet, which
	// no other test uses.
	Name string
}

// NewBucket returns a bucket for one test. The suite runs its tests in
// parallel, each on a bucket of its own.
type NewBucket func(t *testing.T) Bucket

// Run runs the conformance suite against the buckets newBucket returns.
// Each test checks what AWS S3 does; where the server is known to do
// otherwise, the deviations say so, and the tests concerned check the
// server's own documented behaviour instead, so that a server that
// changes is noticed either way.
func Run(t *testing.T, newBucket NewBucket, deviations ...Deviation) {
	t.Helper()
	for _, d := range deviations {
		require.Contains(t, knownDeviations, d, "s3memtest: unknown deviation")
	}
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, setup(t, newBucket, deviations))
		})
	}
}

var suite = []struct {
	name string
	run  func(t *testing.T, b *bundle)
}{
	{"PutStoresWhatGetAndHeadReturn", testPutStores},
	{"PutWithoutIfNoneMatchReplaces", testPutReplaces},
	{"PutOfNothingStoresAnEmptyObject", testPutEmpty},
	{"PutRefusesABodyThatIsNotContentLengthLong", testPutContentLength},
	{"EmptyKeyIsRefusedBeforeItIsSent", testEmptyKey},
	{"IfNoneMatchStarWritesOnlyAMissingKey", testIfNoneMatchStar},
	{"IfNoneMatchOtherThanStarIsNotImplemented", testIfNoneMatchOther},
	{"ConcurrentConditionalPutsHaveOneWinner", testConcurrentConditionalPuts},
	{"ChecksumIsStoredAndReturnedWhenAskedFor", testChecksumStored},
	{"ChecksumThatDoesNotMatchIsRefused", testChecksumMismatch},
	{"MissingKey", testMissingKey},
	{"LastModifiedIsTheWholeSecondOfThePut", testLastModified},
	{"DeleteRemovesAndAMissingKeyIsNoError", testDelete},
	{"MissingBucket", testMissingBucket},
	{"CancelledContextDoesNothing", testCancelled},
	{"ListWalksAPrefixInByteOrder", testListWalks},
	{"ListPageOfExactlyMaxKeysIsNotTruncated", testListExactPage},
	{"ListAnEmptyBucket", testListEmpty},
	{"ListStartsAfterAnyKey", testListStartAfter},
	{"ListTokenWithStartAfterContinues", testListTokenAndStartAfter},
	{"ListMaxKeysZeroListsNothing", testListMaxKeysZero},
	{"ListRefusesNegativeMaxKeys", testListMaxKeysNegative},
	{"ListPagesHoldAtMostAThousandKeys", testListCap},
	{"CursorFindsItsKeyWithAOneKeyListing", testCursorListing},
	{"CursorRoundTrip", testCursorRoundTrip},
	{"QuarantineBodiesRoundTrip", testBodies},
}

// bundle is what a test works with.
type bundle struct {
	Bucket
	ctx        context.Context
	deviations []Deviation
}

func setup(t *testing.T, newBucket NewBucket, deviations []Deviation) *bundle {
	t.Helper()
	return &bundle{Bucket: newBucket(t), ctx: t.Context(), deviations: deviations}
}

// deviates reports whether the server is declared to differ from AWS in d.
func (b *bundle) deviates(d Deviation) bool { return slices.Contains(b.deviations, d) }

func (b *bundle) putInput(key, body string) *s3.PutObjectInput {
	return &s3.PutObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key), Body: strings.NewReader(body)}
}

// put stores body at key, with edit applied to the request, and fails the
// test unless S3 took it.
func (b *bundle) put(t *testing.T, key, body string, edit ...func(*s3.PutObjectInput)) *s3.PutObjectOutput {
	t.Helper()
	in := b.putInput(key, body)
	for _, e := range edit {
		e(in)
	}
	out, err := b.Client.PutObject(b.ctx, in)
	require.NoError(t, err, "put %s", key)
	return out
}

// get returns the content of the object at key, and false when there is
// none.
func (b *bundle) get(t *testing.T, key string) (string, bool) {
	t.Helper()
	out, err := b.Client.GetObject(b.ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	if errors.As(err, new(*types.NoSuchKey)) {
		return "", false
	}
	require.NoError(t, err, "get %s", key)
	return readAll(t, out.Body), true
}

func (b *bundle) head(t *testing.T, key string) *s3.HeadObjectOutput {
	t.Helper()
	out, err := b.Client.HeadObject(b.ctx, &s3.HeadObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	require.NoError(t, err, "head %s", key)
	return out
}

// list makes one ListObjectsV2 request and fails the test unless S3
// answered it.
func (b *bundle) list(t *testing.T, in *s3.ListObjectsV2Input) *s3.ListObjectsV2Output {
	t.Helper()
	in.Bucket = aws.String(b.Name)
	out, err := b.Client.ListObjectsV2(b.ctx, in)
	require.NoError(t, err)
	return out
}

// keys lists every key under prefix, page by page, with the tokens S3
// returns.
func (b *bundle) keys(t *testing.T, prefix string) []string {
	t.Helper()
	var keys []string
	in := &s3.ListObjectsV2Input{Prefix: aws.String(prefix)}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100, "the listing does not end")
		out := b.list(t, in)
		keys = append(keys, keysOf(out)...)
		if !aws.ToBool(out.IsTruncated) {
			return keys
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// requireState fails the test unless the bucket holds exactly want (key to
// content), as a listing and a read of each key see it.
func (b *bundle) requireState(t *testing.T, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, k := range b.keys(t, "") {
		body, ok := b.get(t, k)
		require.True(t, ok, "listed %s, but it cannot be read", k)
		got[k] = body
	}
	require.Equal(t, want, got)
}

func keysOf(out *s3.ListObjectsV2Output) []string {
	keys := make([]string, 0, len(out.Contents))
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

func readAll(t *testing.T, body io.ReadCloser) string {
	t.Helper()
	data, err := io.ReadAll(body)
	require.NoError(t, errors.Join(err, body.Close()))
	return string(data)
}

// code is the S3 error code of err, "" when it is no S3 error answer.
func code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
