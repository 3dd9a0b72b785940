package faultproxy_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
)

// echo is an upstream that answers "answer to <body>" and records each
// request that reached it as "METHOD path?query header: body".
type echo struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newEcho(t *testing.T) *echo {
	t.Helper()
	e := &echo{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.seen = append(e.seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("X-Test")+": "+string(b))
		e.mu.Unlock()
		_, _ = w.Write([]byte("answer to " + string(b)))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *echo) requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

// send makes one request through the proxy and returns the answer's body.
func send(ctx context.Context, url, method, body string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Test", "kept")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// The first request Hold picks gets no answer (its caller's deadline ends
// the call) and reaches the upstream only on Release, as it was sent:
// method, path, query, headers and body. Only the first match is held;
// every other request passes through.
func TestHoldKeepsTheFirstMatchUntilRelease(t *testing.T) {
	t.Parallel()
	up := newEcho(t)
	p := newProxy(t, faultproxy.Config{Service: faultproxy.S3, Target: up.srv.URL,
		Hold: func(_ string, b []byte) bool { return strings.Contains(string(b), "accept") }})

	got, err := send(t.Context(), p.URL+"/b/k", http.MethodPut, "claim g1")
	require.NoError(t, err)
	require.Equal(t, "answer to claim g1", got)
	require.False(t, p.Held())

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = send(ctx, p.URL+"/b/k?partNumber=1", http.MethodPut, "accept g1")
	require.ErrorIs(t, err, context.DeadlineExceeded, "the held request gets no answer")
	require.True(t, p.Held())

	bounded, stop := context.WithTimeout(t.Context(), 10*time.Second) // a second hold would wait forever
	defer stop()
	got, err = send(bounded, p.URL+"/b/k", http.MethodPost, "accept g2")
	require.NoError(t, err, "only the first match is held")
	require.Equal(t, "answer to accept g2", got)
	require.Equal(t, []string{"PUT /b/k kept: claim g1", "POST /b/k kept: accept g2"}, up.requests(),
		"the held request has not reached the upstream")
	require.Equal(t, map[string]int{"PutObject": 1, "UploadPart": 1, "POST /b/key": 1}, p.Counts().Requests,
		"the held request is counted as seen")

	res := p.Release(t.Context())
	require.NoError(t, res.Err)
	require.Equal(t, http.StatusOK, res.Status)
	require.Equal(t, "answer to accept g1", res.Body)
	require.Equal(t, "PUT /b/k?partNumber=1 kept: accept g1", up.requests()[2])
	require.False(t, p.Held())
	require.ErrorIs(t, p.Release(t.Context()).Err, faultproxy.ErrNothingHeld, "released once")
}

// Hold is asked with the operation as the proxy names it, and is not
// asked again once it has picked a request.
func TestHoldIsAskedWithTheOperationUntilItPicks(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, faultproxy.DynamoDB)
	var mu sync.Mutex
	var asked []string
	p := newProxy(t, faultproxy.Config{Service: faultproxy.DynamoDB, Target: up.srv.URL,
		Hold: func(op string, _ []byte) bool {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, op)
			return op == "UpdateItem"
		}})
	require.NoError(t, call(t.Context(), faultproxy.DynamoDB, p.URL, 1))
	c := dynamodb.NewFromConfig(clientConfig(1), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL) })
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("jobs"),
		Key: map[string]ddbtypes.AttributeValue{"job_id": &ddbtypes.AttributeValueMemberS{Value: "job-42"}}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	bounded, stop := context.WithTimeout(t.Context(), 10*time.Second) // a second hold would wait forever
	defer stop()
	require.NoError(t, call(bounded, faultproxy.DynamoDB, p.URL, 1))
	mu.Lock()
	require.Equal(t, []string{"PutItem", "UpdateItem"}, asked)
	mu.Unlock()
	require.Equal(t, 2, up.applied())
	res := p.Release(t.Context())
	require.NoError(t, res.Err)
	require.Equal(t, http.StatusOK, res.Status)
	require.Equal(t, 3, up.applied())
}

// Closing the proxy ends a held request without an answer, even for a
// caller with no deadline of its own.
func TestCloseEndsAHeldRequestWithoutAnAnswer(t *testing.T) {
	t.Parallel()
	up := newEcho(t)
	picked := make(chan struct{})
	p, err := faultproxy.New(faultproxy.Config{Service: faultproxy.DynamoDB, Target: up.srv.URL,
		Hold: func(string, []byte) bool { close(picked); return true }})
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := send(context.Background(), p.URL, http.MethodPost, "accept")
		errc <- err
	}()
	<-picked
	require.NoError(t, p.Close())
	require.Error(t, <-errc, "the held request's caller gets no answer")
	require.Empty(t, up.requests())
}

// Hold may ask the proxy about itself (Held, Counts), as a test's picker
// that shares a lock with code that calls Held does: it is not called
// under the proxy's own lock.
func TestHoldMayAskTheProxy(t *testing.T) {
	t.Parallel()
	up := newEcho(t)
	var p *faultproxy.Proxy
	asked := make(chan bool, 2)
	p = newProxy(t, faultproxy.Config{Service: faultproxy.DynamoDB, Target: up.srv.URL,
		Hold: func(string, []byte) bool {
			asked <- p.Held()
			_ = p.Counts()
			return false
		}})
	done := make(chan error, 1)
	go func() {
		_, err := send(t.Context(), p.URL, http.MethodPost, "claim")
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second): // only a deadlock waits this long
		t.Fatal("the request never came back: Hold was called under the proxy's lock")
	}
	require.False(t, <-asked)
}
