package candidate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

// lostWire answers the requests of a script in turn, recording them on
// its wire; a nil answer is lost: the request went out, and its answer
// never came back (the connection broke), as when S3 applied a put whose
// answer the client never read.
type lostWire struct {
	w       *wire
	answers []func(exchange) *http.Response
}

func (l *lostWire) Do(r *http.Request) (*http.Response, error) {
	var lost bool
	l.w.response = func(ex exchange) *http.Response {
		n := len(l.w.requests()) - 1 // this one is recorded already
		if n >= len(l.answers) || l.answers[n] == nil {
			lost = true
			return response(200, nil, "")
		}
		return l.answers[n](ex)
	}
	resp, err := l.w.Do(r)
	if lost {
		return nil, errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer")
	}
	return resp, err
}

// The candidates bucket's policy refuses a PutObject under candidates/
// without If-None-Match (template.yaml, CandidatesBucketPolicy), so every
// put the store sends must carry it, on every path: the first send, the
// SDK's retries of a 5xx and of a lost answer, and the store's own retry
// of a 409; the lost answer's retry then meets the object it wrote (412)
// and takes it for its own earlier success.
func TestWireEveryPutIsConditional(t *testing.T) {
	t.Parallel()
	content := []byte(`{"articles":120}`)
	sum := sha256.Sum256(content)
	lw := &lostWire{w: &wire{}, answers: []func(exchange) *http.Response{
		func(exchange) *http.Response { return s3Error(500, "InternalError") },              // the SDK retries
		func(exchange) *http.Response { return s3Error(409, "ConditionalRequestConflict") }, // the store retries
		nil, // applied, answer lost: the SDK retries
		func(exchange) *http.Response { return s3Error(412, "PreconditionFailed") },
		func(exchange) *http.Response { // the HEAD that compares: our own object
			return response(200, map[string]string{
				"Content-Length": strconv.Itoa(len(content)), "ETag": `"etag-1"`, "X-Amz-Meta-Job-Id": "job-42",
				"X-Amz-Meta-Generation": "2", "X-Amz-Meta-Attempt-Id": "attempt-b", "X-Amz-Meta-Sha256": hex.EncodeToString(sum[:]),
				"X-Amz-Checksum-Sha256": base64.StdEncoding.EncodeToString(sum[:]),
			}, "")
		},
	}}
	s := wireStore(t, lw.w)
	opts := s.api.(*s3.Client).Options()
	opts.HTTPClient = lw
	s.api = s3.New(opts)
	res, err := s.Put(context.Background(), Key{JobID: "job-42", Generation: 2, AttemptID: "attempt-b", Ext: "json"}, bytes.NewReader(content))
	require.NoError(t, err)
	require.True(t, res.AlreadyExisted, "the lost answer's retry found its own object")

	var puts int
	for _, req := range lw.w.requests() {
		if req.method != http.MethodPut {
			continue
		}
		puts++
		require.Equal(t, "*", req.header.Get("If-None-Match"), "put %d", puts)
		require.Equal(t, content, req.body, "put %d sends the whole body", puts)
	}
	require.Equal(t, 4, puts, "the first send, the SDK's retry of the 500, the store's of the 409, the SDK's of the lost answer")
}
