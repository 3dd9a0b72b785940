package sdkhttp_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/sdkhttp"
)

// The race GuardRequestBodies closes, made to happen every time: the
// transport's write goroutine is held right after the request body has
// reached the server, until the server has answered and the SDK has closed
// the request body; the server sends the first part of its answer at once
// and the rest only after the write goroutine has gone on. Unguarded, the
// write goroutine drains the closed body, gets io.EOF from its WriteTo and
// closes the connection while the SDK reads the answer; guarded, the answer
// arrives whole.
func TestGuardRequestBodiesKeepsTheConnectionOfAnAnswerBeingRead(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		t.Run("guarded="+strconv.FormatBool(guarded), func(t *testing.T) {
			policy := strings.Repeat("p", 16<<10) // far more than a read of the connection
			answer, err := json.Marshal(map[string]map[string]string{"Attributes": {"Policy": policy}})
			require.NoError(t, err)
			resumed := make(chan struct{}) // the write goroutine has gone on after the body
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
				_, _ = w.Write(answer[:1024])
				w.(http.Flusher).Flush()
				select {
				case <-resumed:
				case <-time.After(5 * time.Second):
				}
				time.Sleep(100 * time.Millisecond) // a closing connection closes at once
				_, _ = w.Write(answer[1024:])
			}))
			defer srv.Close()

			bodyClosed := make(chan struct{}) // the SDK closed the request body
			var closeOnce sync.Once
			dial := (&net.Dialer{}).DialContext
			transport := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
				tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := dial(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return &holdAfterBody{Conn: c, until: bodyClosed, resumed: resumed}, nil
				}
			})
			var client aws.HTTPClient = transport
			if guarded {
				client = sdkhttp.GuardRequestBodies(client)
			}
			client = closeSignal{next: client, closed: func() { closeOnce.Do(func() { close(bodyClosed) }) }}
			sqsClient := sqs.New(sqs.Options{
				Region:           "us-east-1",
				Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
				BaseEndpoint:     aws.String(srv.URL),
				HTTPClient:       client,
				RetryMaxAttempts: 1,
			})
			out, err := sqsClient.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(srv.URL + "/000000000000/q")})
			if !guarded {
				require.ErrorContains(t, err, "use of closed network connection",
					"the SDK no longer closes a request body under the transport, or its closed body's WriteTo no longer returns io.EOF: GuardRequestBodies may have become needless")
				return
			}
			require.NoError(t, err)
			require.Equal(t, policy, out.Attributes["Policy"])
		})
	}
}

// holdAfterBody is a connection whose second write (a request's body,
// after its headers) returns only once until is closed, and then closes
// resumed.
type holdAfterBody struct {
	net.Conn
	until, resumed chan struct{}
	writes         int
}

func (c *holdAfterBody) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.writes++; c.writes == 2 {
		select {
		case <-c.until:
		case <-time.After(5 * time.Second):
		}
		close(c.resumed)
	}
	return n, err
}

// closeSignal sends requests through next with their body wrapped, in
// place, so that the caller's Close of it is seen; the wrapper keeps the
// body's WriteTo.
type closeSignal struct {
	next   aws.HTTPClient
	closed func()
}

func (c closeSignal) Do(req *http.Request) (*http.Response, error) {
	if wt, ok := req.Body.(interface {
		io.ReadCloser
		io.WriterTo
	}); ok {
		req.Body = signalingBody{body: wt, closed: c.closed}
	}
	return c.next.Do(req)
}

type signalingBody struct {
	body interface {
		io.ReadCloser
		io.WriterTo
	}
	closed func()
}

func (b signalingBody) Read(p []byte) (int, error)         { return b.body.Read(p) }
func (b signalingBody) WriteTo(w io.Writer) (int64, error) { return b.body.WriteTo(w) }
func (b signalingBody) Close() error                       { err := b.body.Close(); b.closed(); return err }

// A nil client, which config.LoadDefaultConfig leaves unless something
// sets one, is guarded as the SDK's default client, not as nil: the first
// request must not panic.
func TestGuardRequestBodiesOfNoClientIsTheSDKsDefault(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{"QueueUrls":["http://127.0.0.1/q"]}`))
	}))
	defer srv.Close()
	c := sdkhttp.GuardRequestBodies(nil)
	require.Equal(t, sdkhttp.GuardRequestBodies(awshttp.NewBuildableClient()), c, "the SDK's default client, guarded")
	client := sqs.New(sqs.Options{
		Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL), HTTPClient: c,
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""),
	})
	out, err := client.ListQueues(t.Context(), &sqs.ListQueuesInput{})
	require.NoError(t, err)
	require.Equal(t, []string{"http://127.0.0.1/q"}, out.QueueUrls)
}
