// Package sdkhttp guards the AWS SDK's requests against a race that loses answers.
package sdkhttp

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// GuardRequestBodies returns an SDK HTTP client that sends each request
// through c with a body that the transport can only Read and Close: the
// body no longer offers io.WriterTo.
//
// Without it, a connection can be closed under an answer that is being
// read. The SDK (smithy-go's ClientHandler, v1.28.9) closes a request's
// body as soon as Do returns with the response headers, and the closed
// body's WriteTo then returns io.EOF. net/http writes a body of known
// length and then drains it with io.Copy, which calls WriteTo. When the
// server answers between the two (the transport's write goroutine was
// descheduled right after the body reached the socket, which a loaded
// machine and a server on the same host make likely), the drain reports
// that io.EOF as a write error, and the write goroutine closes the
// connection while the caller still reads the answer: "https response
// error StatusCode: 200 … deserialization failed, read tcp …: use of
// closed network connection". The SDK retries the attempt, but the first
// answer is lost: for a ReceiveMessage, its messages stay in flight until
// their visibility timeout. Through Read, a closed body reports the end of
// its data, which the drain accepts.
//
// Nothing is lost for a body of known length, which net/http copies through
// an io.LimitedReader (it never offers WriteTo) and drains; a body of
// unknown length is copied through a buffer instead of by its WriteTo.
//
// A nil c (what config.LoadDefaultConfig leaves when nothing sets a
// client) is the SDK's default client, as a service client would make it.
// The service clients then see a client that is not the SDK's own, so
// they no longer apply a DefaultsMode's connect and TLS timeouts to it:
// only the legacy defaults mode (the SDK's default) is as before.
func GuardRequestBodies(c aws.HTTPClient) aws.HTTPClient {
	if c == nil {
		c = awshttp.NewBuildableClient()
	}
	return guardedClient{next: c}
}

type guardedClient struct{ next aws.HTTPClient }

func (g guardedClient) Do(req *http.Request) (*http.Response, error) {
	if _, ok := req.Body.(io.WriterTo); ok && req.Body != http.NoBody {
		r := *req // the caller keeps its request, and closes its own body
		r.Body = readCloser{req.Body}
		req = &r
	}
	return g.next.Do(req)
}

// readCloser hides every method of a body but Read and Close.
type readCloser struct{ io.ReadCloser }
