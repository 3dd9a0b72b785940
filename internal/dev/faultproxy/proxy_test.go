package faultproxy_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
)

// upstream is a tiny stand-in for a service on 127.0.0.1: it answers every
// request of its protocol with success and counts what reached it (what was
// applied).
type upstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	ops map[string]int
}

func newUpstream(t *testing.T, svc faultproxy.Service) *upstream {
	t.Helper()
	u := &upstream{ops: map[string]int{}}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		op := r.Header.Get("X-Amz-Target")
		if svc == faultproxy.S3 {
			op = faultproxy.S3Operation(r.Method, r.URL.Path, r.URL.Query(), r.Header)
		}
		u.mu.Lock()
		u.ops[op]++
		u.mu.Unlock()
		switch svc {
		case faultproxy.DynamoDB:
			body := `{}`
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
			_, _ = io.WriteString(w, body)
		case faultproxy.SQS:
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			_, _ = io.WriteString(w, `{"QueueUrl":"http://127.0.0.1/000000000000/q.fifo"}`)
		case faultproxy.S3:
			w.Header().Set("ETag", `"5d41402abc4b2a76b9719d911017c592"`)
			w.Header().Set("Content-Length", "5")
			if r.Method != http.MethodHead {
				_, _ = io.WriteString(w, "hello")
			}
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) applied() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, v := range u.ops {
		n += v
	}
	return n
}

func newProxy(t *testing.T, cfg faultproxy.Config) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(cfg)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(p.URL, "http://127.0.0.1:"), p.URL)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// clientConfig is an SDK configuration for the proxy. attempts 1 shows
// what one attempt gets; more retries, immediately (no backoff, no retry
// quota), with the SDK's own rules for what is retryable.
func clientConfig(attempts int) aws.Config {
	cfg := aws.Config{
		Region:      "eu-west-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  &http.Client{Transport: &http.Transport{}},
	}
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			o.RateLimiter = ratelimit.None
		})
	}
	return cfg
}

// call makes one request of the service through the proxy with a real SDK
// client and returns the SDK's error.
func call(ctx context.Context, svc faultproxy.Service, url string, attempts int) error {
	cfg := clientConfig(attempts)
	switch svc {
	case faultproxy.DynamoDB:
		c := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(url) })
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("jobs"),
			Item: map[string]ddbtypes.AttributeValue{"job_id": &ddbtypes.AttributeValueMemberS{Value: "job-42"}}})
		return err
	case faultproxy.SQS:
		c := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) })
		_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("q.fifo")})
		return err
	case faultproxy.S3:
		c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(url); o.UsePathStyle = true })
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("candidates/job-42/x"), Body: strings.NewReader("hello")})
		return err
	}
	return fmt.Errorf("no service %v", svc)
}

// operation is the name the proxy gives call's request.
var operation = map[faultproxy.Service]string{faultproxy.DynamoDB: "PutItem", faultproxy.SQS: "GetQueueUrl", faultproxy.S3: "PutObject"}

var services = []faultproxy.Service{faultproxy.DynamoDB, faultproxy.SQS, faultproxy.S3}

func retryable(err error) bool {
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

func throttle(err error) bool {
	return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
}

func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// Each fault kind at rate 1, one attempt per call, as a real SDK client of
// each service sees it: the error the service would send (status, code),
// what the SDK's default retry rules make of it, and whether the request
// reached the upstream.
func TestEachFaultAsTheSDKSeesIt(t *testing.T) {
	t.Parallel()
	const calls = 8
	type want struct {
		statuses, codes map[string]bool // every value seen must be in these, and each seen at least once
		throttle        bool
		applied         int // requests the upstream got
	}
	set := func(vs ...string) map[string]bool {
		m := map[string]bool{}
		for _, v := range vs {
			m[v] = true
		}
		return m
	}
	cases := map[faultproxy.Service]map[faultproxy.Kind]want{
		faultproxy.DynamoDB: {
			faultproxy.ServerError: {statuses: set("500", "503"), codes: set("InternalServerError", "ServiceUnavailable")},
			faultproxy.Throttle:    {statuses: set("400"), codes: set("ProvisionedThroughputExceededException", "ThrottlingException"), throttle: true},
		},
		faultproxy.SQS: {
			faultproxy.ServerError: {statuses: set("500", "503"), codes: set("InternalError", "ServiceUnavailable")},
			faultproxy.Throttle:    {statuses: set("403", "400"), codes: set("RequestThrottled", "ThrottlingException"), throttle: true},
		},
		faultproxy.S3: {
			faultproxy.ServerError: {statuses: set("500", "503"), codes: set("InternalError", "ServiceUnavailable")},
			faultproxy.Throttle:    {statuses: set("503"), codes: set("SlowDown"), throttle: true},
		},
	}
	for _, svc := range services {
		cases[svc][faultproxy.Reset] = want{statuses: set("0"), codes: set("")}
		cases[svc][faultproxy.Drop] = want{statuses: set("0"), codes: set(""), applied: calls}
	}
	for _, svc := range services {
		for kind, w := range cases[svc] {
			t.Run(svc.String()+"/"+string(kind), func(t *testing.T) {
				t.Parallel()
				up := newUpstream(t, svc)
				var rates faultproxy.Rates
				switch kind {
				case faultproxy.ServerError:
					rates.ServerError = 1
				case faultproxy.Throttle:
					rates.Throttle = 1
				case faultproxy.Reset:
					rates.Reset = 1
				case faultproxy.Drop:
					rates.Drop = 1
				}
				p := newProxy(t, faultproxy.Config{Service: svc, Target: up.srv.URL, Seed: 1, Rates: rates})
				statuses, codes := map[string]bool{}, map[string]bool{}
				for i := range calls {
					err := call(t.Context(), svc, p.URL, 1)
					require.Error(t, err)
					if i == 0 {
						t.Logf("the SDK's error: %v", err)
					}
					require.True(t, retryable(err), "the SDK retries it: %v", err)
					require.Equal(t, w.throttle, throttle(err), "a throttling error for the SDK: %v", err)
					statuses[strconv.Itoa(status(err))], codes[code(err)] = true, true
					if kind == faultproxy.Reset || kind == faultproxy.Drop {
						// No answer at all: a send error, which the SDK
						// classifies as a connection error.
						var ce interface{ ConnectionError() bool }
						require.ErrorAs(t, err, &ce, "%v", err)
						require.True(t, ce.ConnectionError())
					}
				}
				require.Equal(t, w.statuses, statuses)
				require.Equal(t, w.codes, codes)
				require.Equal(t, w.applied, up.applied(), "requests that reached the upstream")
				c := p.Counts()
				require.Equal(t, calls, c.Requests[operation[svc]])
				require.Equal(t, calls, c.Injected[kind][operation[svc]])
				require.Equal(t, calls, c.Total(kind))
				for _, other := range faultproxy.Kinds {
					if other != kind {
						require.Zero(t, c.Total(other), "%s", other)
					}
				}
			})
		}
	}
}

// The modeled errors come back as the SDK's own types: code that checks
// for a throttled DynamoDB write or SQS request finds it.
func TestThrottlesAreTheModeledErrors(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, faultproxy.DynamoDB)
	p := newProxy(t, faultproxy.Config{Service: faultproxy.DynamoDB, Target: up.srv.URL, Seed: 3, Rates: faultproxy.Rates{Throttle: 1}})
	var pte *ddbtypes.ProvisionedThroughputExceededException
	for i := 0; i < 16 && pte == nil; i++ {
		err := call(t.Context(), faultproxy.DynamoDB, p.URL, 1)
		_ = errors.As(err, &pte)
	}
	require.NotNil(t, pte, "a ProvisionedThroughputExceededException among 16 throttles")

	sq := newUpstream(t, faultproxy.SQS)
	ps := newProxy(t, faultproxy.Config{Service: faultproxy.SQS, Target: sq.srv.URL, Seed: 3, Rates: faultproxy.Rates{Throttle: 1}})
	var rt *sqstypes.RequestThrottled
	for i := 0; i < 16 && rt == nil; i++ {
		err := call(t.Context(), faultproxy.SQS, ps.URL, 1)
		_ = errors.As(err, &rt)
	}
	require.NotNil(t, rt, "an SQS RequestThrottled among 16 throttles")
	require.Equal(t, "RequestThrottled", rt.ErrorCode())
}

// With every kind at once, the SDK's retryer (given enough attempts) gets
// every call through, and the upstream got exactly the requests that were
// forwarded: the successes and the drops, never a 5xx, a throttle or a
// reset.
func TestTheSDKRetriesThroughEveryFault(t *testing.T) {
	t.Parallel()
	for _, svc := range services {
		t.Run(svc.String(), func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, svc)
			var mu sync.Mutex
			var slept []time.Duration
			p := newProxy(t, faultproxy.Config{
				Service: svc, Target: up.srv.URL, Seed: 42,
				Rates:      faultproxy.Rates{Latency: 0.3, ServerError: 0.15, Throttle: 0.15, Reset: 0.15, Drop: 0.15},
				MinLatency: time.Millisecond, MaxLatency: 3 * time.Millisecond,
				Sleep: func(context.Context, time.Duration) error {
					mu.Lock()
					defer mu.Unlock()
					slept = append(slept, 0)
					return nil
				},
			})
			const calls = 40
			for range calls {
				require.NoError(t, call(t.Context(), svc, p.URL, 30))
			}
			c := p.Counts()
			for _, k := range faultproxy.Kinds {
				require.Positive(t, c.Total(k), "%s injected", k)
			}
			seen := c.Requests[operation[svc]]
			notForwarded := c.Total(faultproxy.ServerError) + c.Total(faultproxy.Throttle) + c.Total(faultproxy.Reset)
			require.Equal(t, calls+c.Total(faultproxy.Drop)+notForwarded, seen, "one success per call; every failed attempt was retried")
			require.Equal(t, seen-notForwarded, up.applied())
			require.Len(t, slept, c.Total(faultproxy.Latency))
			t.Logf("%s", c)
		})
	}
}

// Latency waits (through Sleep: no clock is read here) a drawn time within
// the bounds, and then the request goes through.
func TestLatencyIsWithinItsBounds(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, faultproxy.DynamoDB)
	var recorded sleeps
	p := newProxy(t, faultproxy.Config{
		Service: faultproxy.DynamoDB, Target: up.srv.URL, Seed: 9, Rates: faultproxy.Rates{Latency: 1},
		MinLatency: 10 * time.Millisecond, MaxLatency: 50 * time.Millisecond, Sleep: recorded.sleep,
	})
	for range 20 {
		require.NoError(t, call(t.Context(), faultproxy.DynamoDB, p.URL, 1))
	}
	slept := recorded.all()
	require.Len(t, slept, 20)
	require.Equal(t, slept, p.Delays())
	distinct := map[time.Duration]bool{}
	for _, d := range slept {
		require.GreaterOrEqual(t, d, 10*time.Millisecond)
		require.LessOrEqual(t, d, 50*time.Millisecond)
		distinct[d] = true
	}
	require.Greater(t, len(distinct), 1, "drawn, not fixed")
	require.Equal(t, 20, up.applied())
	require.Equal(t, 20, p.Counts().Total(faultproxy.Latency))
}

// A delay the caller does not wait for ends the request without
// forwarding it.
func TestACallerThatGivesUpDuringTheDelayIsNotForwarded(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, faultproxy.DynamoDB)
	started := make(chan struct{})
	p := newProxy(t, faultproxy.Config{
		Service: faultproxy.DynamoDB, Target: up.srv.URL, Rates: faultproxy.Rates{Latency: 1},
		Sleep: func(ctx context.Context, _ time.Duration) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		},
	})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- call(ctx, faultproxy.DynamoDB, p.URL, 1) }()
	<-started
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.NoError(t, p.Close()) // waits for the handler
	require.Zero(t, up.applied())
}

// Disabled, the proxy forwards everything untouched and still counts what
// it sees.
func TestDisabledForwardsEverything(t *testing.T) {
	t.Parallel()
	for _, svc := range services {
		up := newUpstream(t, svc)
		p := newProxy(t, faultproxy.Config{Service: svc, Target: up.srv.URL, Rates: faultproxy.Rates{Reset: 1, Latency: 1}})
		p.SetEnabled(false)
		for range 5 {
			require.NoError(t, call(t.Context(), svc, p.URL, 1))
		}
		require.Equal(t, 5, up.applied())
		c := p.Counts()
		require.Equal(t, 5, c.Requests[operation[svc]])
		for _, k := range faultproxy.Kinds {
			require.Zero(t, c.Total(k))
		}
		p.SetEnabled(true)
		require.Error(t, call(t.Context(), svc, p.URL, 1))
	}
}

// Rates per operation override the default: here only UpdateItem is
// faulted, PutItem goes through.
func TestRatesPerOperation(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, faultproxy.DynamoDB)
	p := newProxy(t, faultproxy.Config{Service: faultproxy.DynamoDB, Target: up.srv.URL,
		Rates: faultproxy.Rates{ServerError: 1}, Operations: map[string]faultproxy.Rates{"PutItem": {}}})
	require.NoError(t, call(t.Context(), faultproxy.DynamoDB, p.URL, 1))
	c := dynamodb.NewFromConfig(clientConfig(1), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL) })
	_, err := c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String("jobs"),
		Key: map[string]ddbtypes.AttributeValue{"job_id": &ddbtypes.AttributeValueMemberS{Value: "job-42"}}})
	require.Error(t, err)
	require.Contains(t, []int{500, 503}, status(err))
	counts := p.Counts()
	require.Equal(t, map[string]int{"PutItem": 1, "UpdateItem": 1}, counts.Requests)
	require.Equal(t, map[string]int{"UpdateItem": 1}, counts.Injected[faultproxy.ServerError])
	require.Contains(t, counts.String(), "UpdateItem")
}

// New refuses each Config it cannot run, with an error that wraps
// ErrInvalidConfig and names the setting; the bounds themselves pass.
func TestConfigIsChecked(t *testing.T) {
	t.Parallel()
	const target = "http://127.0.0.1:1"
	for _, c := range []struct {
		name, field string
		cfg         faultproxy.Config
	}{
		{"no service", "Service", faultproxy.Config{Target: target}},
		{"unknown service", "Service", faultproxy.Config{Service: faultproxy.S3 + 1, Target: target}},
		{"no target", "Target", faultproxy.Config{Service: faultproxy.S3}},
		{"relative target", "Target", faultproxy.Config{Service: faultproxy.S3, Target: "127.0.0.1:1"}},
		{"rate above 1", "Rates.Latency", faultproxy.Config{Service: faultproxy.S3, Target: target, Rates: faultproxy.Rates{Latency: 1.001}}},
		{"negative rate", "Rates.Drop", faultproxy.Config{Service: faultproxy.S3, Target: target, Rates: faultproxy.Rates{Drop: -0.1}}},
		{"errors above 1", "Rates", faultproxy.Config{Service: faultproxy.S3, Target: target, Rates: faultproxy.Rates{Drop: 0.6, Reset: 0.41}}},
		{"operation above", "Operations[PutObject].Throttle", faultproxy.Config{Service: faultproxy.S3, Target: target, Operations: map[string]faultproxy.Rates{"PutObject": {Throttle: 2}}}},
		{"latency reversed", "MaxLatency", faultproxy.Config{Service: faultproxy.S3, Target: target, MinLatency: time.Second, MaxLatency: time.Second - 1}},
		{"negative latency", "MinLatency", faultproxy.Config{Service: faultproxy.S3, Target: target, MinLatency: -1, MaxLatency: time.Second}},
	} {
		_, err := faultproxy.New(c.cfg)
		require.ErrorIs(t, err, faultproxy.ErrInvalidConfig, c.name)
		require.ErrorContains(t, err, c.field, c.name)
	}
	for name, cfg := range map[string]faultproxy.Config{
		"rates at 1":          {Service: faultproxy.S3, Target: target, Rates: faultproxy.Rates{Latency: 1, Drop: 0.6, Reset: 0.4}},
		"latency bounds meet": {Service: faultproxy.S3, Target: target, MinLatency: time.Second, MaxLatency: time.Second},
		"no latency bounds":   {Service: faultproxy.DynamoDB, Target: target},
	} {
		require.NoError(t, cfg.Validate(), name)
	}
}

func TestS3OperationNames(t *testing.T) {
	t.Parallel()
	q := func(s string) map[string][]string {
		m := map[string][]string{}
		for _, kv := range strings.Split(s, "&") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			m[k] = append(m[k], v)
		}
		return m
	}
	copyHdr := http.Header{"X-Amz-Copy-Source": {"/b/k"}}
	for _, c := range []struct {
		method, path, query string
		header              http.Header
		want                string
	}{
		{"GET", "/", "", nil, "ListBuckets"},
		{"PUT", "/b/candidates/job-42/g0000000001/a.ndjson", "x-id=PutObject", nil, "PutObject"},
		{"PUT", "/b/k", "", copyHdr, "CopyObject"},
		{"PUT", "/b/k", "partNumber=1&uploadId=u", nil, "UploadPart"},
		{"GET", "/b/k", "x-id=GetObject", nil, "GetObject"},
		{"HEAD", "/b/k", "", nil, "HeadObject"},
		{"DELETE", "/b/k", "x-id=DeleteObject", nil, "DeleteObject"},
		{"DELETE", "/b/k", "uploadId=u", nil, "AbortMultipartUpload"},
		{"POST", "/b/k", "uploads", nil, "CreateMultipartUpload"},
		{"POST", "/b/k", "uploadId=u", nil, "CompleteMultipartUpload"},
		{"GET", "/b", "list-type=2&prefix=candidates%2F", nil, "ListObjectsV2"},
		{"GET", "/b", "", nil, "ListObjects"},
		{"HEAD", "/b", "", nil, "HeadBucket"},
		{"PUT", "/b", "", nil, "CreateBucket"},
		{"POST", "/b", "delete", nil, "DeleteObjects"},
		{"PATCH", "/b/k", "", nil, "PATCH /b/key"},
	} {
		require.Equal(t, c.want, faultproxy.S3Operation(c.method, c.path, q(c.query), c.header), "%s %s?%s", c.method, c.path, c.query)
	}
}

func TestCountsAdd(t *testing.T) {
	t.Parallel()
	a := faultproxy.Counts{Requests: map[string]int{"PutItem": 2}, Injected: map[faultproxy.Kind]map[string]int{faultproxy.Drop: {"PutItem": 1}}}
	b := faultproxy.Counts{Requests: map[string]int{"PutItem": 1, "GetItem": 4}, Injected: map[faultproxy.Kind]map[string]int{faultproxy.Drop: {"GetItem": 2}}}
	s := a.Add(b)
	require.Equal(t, 7, s.Seen())
	require.Equal(t, 3, s.Total(faultproxy.Drop))
	require.Equal(t, 2, a.Seen(), "a is unchanged")
}
