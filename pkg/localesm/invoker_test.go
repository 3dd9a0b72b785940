package localesm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

func sqsPayload(t *testing.T, ids ...string) []byte {
	t.Helper()
	b, err := json.Marshal(events.SQSEvent{Records: sqsBatch(ids...)})
	require.NoError(t, err)
	return b
}

func TestFuncPassesEventDeadlineAndLambdaContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = 5 * time.Second
		var got struct {
			ids      []string
			deadline time.Time
			lc       *lambdacontext.LambdaContext
		}
		inv := Func(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			for _, r := range ev.Records {
				got.ids = append(got.ids, r.MessageId)
			}
			got.deadline, _ = ctx.Deadline()
			got.lc, _ = lambdacontext.FromContext(ctx)
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "b"}}}, nil
		})
		start := time.Now()
		res, err := inv.Invoke(t.Context(), Invocation{RequestID: "req-1", FunctionARN: DefaultFunctionARN, Timeout: timeout, Payload: sqsPayload(t, "a", "b")})
		require.NoError(t, err)
		require.Equal(t, StatusOK, res.Status)
		require.JSONEq(t, `{"batchItemFailures":[{"itemIdentifier":"b"}]}`, string(res.Payload))
		require.Equal(t, []string{"a", "b"}, got.ids)
		require.Equal(t, start.Add(timeout), got.deadline, "the handler's deadline is the timeout away from its start")
		require.NotNil(t, got.lc)
		require.Equal(t, "req-1", got.lc.AwsRequestID)
		require.Equal(t, DefaultFunctionARN, got.lc.InvokedFunctionArn)
	})
}

type codedError struct{ code string }

func (e *codedError) Error() string { return "coded: " + e.code }

func TestFuncFailures(t *testing.T) {
	t.Parallel()
	type resp = events.SQSEventResponse
	cases := []struct {
		name      string
		fn        func(context.Context, events.SQSEvent) (resp, error)
		payload   string
		timeout   time.Duration
		status    Status
		errorType string
	}{
		{"error", func(context.Context, events.SQSEvent) (resp, error) { return resp{}, &codedError{"x"} }, "", time.Second, StatusFunctionError, "codedError"},
		{"panic", func(context.Context, events.SQSEvent) (resp, error) { panic("boom") }, "", time.Second, StatusFunctionError, "Runtime.Panic"},
		{"undecodable event", func(context.Context, events.SQSEvent) (resp, error) { return resp{}, nil }, `{"Records": 7}`, time.Second, StatusFunctionError, "Runtime.UnmarshalError"},
		// The Go runtime answers every invocation of a nil handler with
		// the error "handler is nil" (aws-lambda-go's lambda.NewHandler).
		{"nil handler", nil, "", time.Second, StatusFunctionError, "errorString"},
		{"returns after its deadline", func(ctx context.Context, _ events.SQSEvent) (resp, error) {
			<-ctx.Done()
			return resp{}, nil // a success that comes too late is discarded
		}, "", 50 * time.Millisecond, StatusTimeout, "Sandbox.Timedout"},
		{"ignores its deadline", func(context.Context, events.SQSEvent) (resp, error) {
			time.Sleep(100 * time.Millisecond)
			return resp{}, nil
		}, "", 20 * time.Millisecond, StatusTimeout, "Sandbox.Timedout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				payload := []byte(tc.payload)
				if tc.payload == "" {
					payload = sqsPayload(t, "a")
				}
				res, err := Func(tc.fn).Invoke(t.Context(), Invocation{RequestID: "r", Timeout: tc.timeout, Payload: payload})
				require.NoError(t, err)
				require.Equal(t, tc.status, res.Status)
				var doc errorDocument
				require.NoError(t, json.Unmarshal(res.Payload, &doc))
				require.Equal(t, tc.errorType, doc.ErrorType)
				require.NotEmpty(t, doc.ErrorMessage)
			})
		})
	}
}

func TestFuncWaitsForAHandlerThatIgnoresItsDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var returned atomic.Bool
		inv := Func(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			time.Sleep(80 * time.Millisecond)
			returned.Store(true)
			return events.SQSEventResponse{}, nil
		})
		res, err := inv.Invoke(t.Context(), Invocation{Timeout: 10 * time.Millisecond, Payload: sqsPayload(t, "a")})
		require.NoError(t, err)
		require.True(t, returned.Load(), "Invoke returned while the handler still ran")
		require.Equal(t, StatusTimeout, res.Status)
	})
}

func TestClassifyRIE(t *testing.T) {
	t.Parallel()
	cases := []struct {
		header, body string
		status       Status
	}{
		{"", `{"batchItemFailures":null}`, StatusOK},
		{"", `null`, StatusOK},
		{"", ``, StatusOK},
		{"", `{"errorMessage":"testbootstrap: asked to fail the batch","errorType":"errorString"}`, StatusFunctionError},
		{"", `{"errorType":"Runtime.ExitError","errorMessage":"exit status 2","stackTrace":[]}`, StatusFunctionError},
		{"", `{"errorMessage":"x","errorType":"y","batchItemFailures":[]}`, StatusOK},
		{"", `Task timed out after 2.00 seconds`, StatusTimeout},
		{"Unhandled", `{"anything":1}`, StatusFunctionError},
	}
	for _, tc := range cases {
		require.Equal(t, tc.status, classifyRIE(tc.header, []byte(tc.body)).Status, "header %q body %q", tc.header, tc.body)
	}
}

// fakeRIE answers like aws-lambda-rie and records how many invocations
// overlapped.
type fakeRIE struct {
	active, maxActive atomic.Int32
	delay             time.Duration
}

func (f *fakeRIE) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.active.Add(1)
	defer f.active.Add(-1)
	for {
		m := f.maxActive.Load()
		if n <= m || f.maxActive.CompareAndSwap(m, n) {
			break
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != rieInvokePath {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var ev events.SQSEvent
	_ = json.Unmarshal(body, &ev)
	time.Sleep(f.delay)
	switch {
	case len(ev.Records) == 0:
		http.Error(w, "no records", http.StatusBadRequest)
	case ev.Records[0].Body == "error":
		_, _ = io.WriteString(w, `{"errorMessage":"failed","errorType":"errorString"}`)
	case ev.Records[0].Body == "exit": // as aws-lambda-rie answers when the runtime exits mid-invocation
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, `{"errorType":"Runtime.ExitError","errorMessage":"RequestId: 1 Error: Runtime exited with error: exit status 1"}`)
	case ev.Records[0].Body == "oversized": // as aws-lambda-rie answers a response over its limit
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, `{"errorType":"Function.ResponseSizeTooLarge","errorMessage":"Response payload size exceeded maximum allowed payload size (6291556 bytes)."}`)
	case ev.Records[0].Body == "bad gateway":
		http.Error(w, "bad gateway", http.StatusBadGateway)
	case ev.Records[0].Body == "sleep":
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
	case strings.HasPrefix(ev.Records[0].Body, "size:"):
		n, _ := strconv.Atoi(strings.TrimPrefix(ev.Records[0].Body, "size:"))
		_, _ = w.Write(jsonOfSize(n))
	default:
		_, _ = io.WriteString(w, `{"batchItemFailures":null}`)
	}
}

// jsonOfSize is a JSON string of exactly n bytes (n >= 2).
func jsonOfSize(n int) []byte {
	b := bytes.Repeat([]byte("x"), n)
	b[0], b[n-1] = '"', '"'
	return b
}

// handlerTransport is an http.RoundTripper that serves each request with
// its handler in this process, honouring the request's context as a
// connection would. An RIE invoker on it runs inside a synctest bubble:
// with a real connection the test would depend on the wall clock, and a
// loaded machine could make a prompt answer miss a short deadline.
type handlerTransport struct{ h http.Handler }

func (tr handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	answered := make(chan *http.Response, 1)
	go func() {
		defer func() { _ = req.Body.Close() }()
		rec := httptest.NewRecorder()
		tr.h.ServeHTTP(rec, req)
		answered <- rec.Result()
	}()
	select {
	case resp := <-answered:
		return resp, nil
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}

// inMemoryRIE is an RIE invoker whose emulator is h, called in memory.
func inMemoryRIE(t testing.TB, h http.Handler) *RIE {
	t.Helper()
	rie := newRIE(t, "127.0.0.1:9001")
	rie.client = &http.Client{Transport: handlerTransport{h}}
	return rie
}

// testResponseSizeLimit invokes inv with responses of MaxResponseSize bytes
// (returned whole) and longer (a function error naming the size and the
// limit), each case a subtest.
func testResponseSizeLimit(t *testing.T, inv Invoker) {
	t.Helper()
	invoke := func(t *testing.T, size int) Result {
		res, err := inv.Invoke(t.Context(), Invocation{Timeout: time.Minute, Payload: rieEvent(t, fmt.Sprint("size:", size))})
		require.NoError(t, err)
		return res
	}
	t.Run("at the limit", func(t *testing.T) {
		res := invoke(t, MaxResponseSize)
		require.Equal(t, StatusOK, res.Status)
		require.Equal(t, MaxResponseSize, len(res.Payload), "a response within the limit is returned whole")
	})
	for _, size := range []int{MaxResponseSize + 1, 7_000_000} {
		t.Run(fmt.Sprint(size, " bytes"), func(t *testing.T) {
			res := invoke(t, size)
			require.Equal(t, StatusFunctionError, res.Status, "a response over the limit is a function error, not a response (got %d bytes)", len(res.Payload))
			var doc errorDocument
			require.NoError(t, json.Unmarshal(res.Payload, &doc))
			require.Equal(t, "Function.ResponseSizeTooLarge", doc.ErrorType)
			require.Contains(t, doc.ErrorMessage, fmt.Sprintf("(%d bytes)", size), "the message names the size")
			require.Contains(t, doc.ErrorMessage, "(6291556 bytes)", "the message names the limit")
		})
	}
}

// TestFuncResponseSizeLimit: a response of MaxResponseSize bytes is
// returned whole; one byte more fails the invocation as Lambda does.
func TestFuncResponseSizeLimit(t *testing.T) {
	t.Parallel()
	testResponseSizeLimit(t, Func(func(_ context.Context, ev events.SQSEvent) (json.RawMessage, error) {
		n, _ := strconv.Atoi(strings.TrimPrefix(ev.Records[0].Body, "size:"))
		return jsonOfSize(n), nil
	}))
}

// TestRIEResponseSizeLimit: the invoker neither cuts a response of
// MaxResponseSize bytes short nor passes on a longer one, cut or whole:
// the longer one fails the invocation, with its size in the message.
func TestRIEResponseSizeLimit(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&fakeRIE{})
	t.Cleanup(srv.Close)
	testResponseSizeLimit(t, newRIE(t, srv.URL))
}

func rieEvent(t *testing.T, body string) []byte {
	t.Helper()
	b, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: body}}})
	require.NoError(t, err)
	return b
}

func TestNewRIEURL(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:9001", "http://127.0.0.1:9001", "http://127.0.0.1:9001/"} {
		require.Equal(t, "http://127.0.0.1:9001"+rieInvokePath, newRIE(t, addr).URL(), addr)
	}
}

// newRIE is the invoker of the emulator at addr.
func newRIE(t testing.TB, addr string) *RIE {
	t.Helper()
	r, err := NewRIE(RIEConfig{Addr: addr})
	require.NoError(t, err)
	return r
}

func TestRIEInvoke(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		fake := &fakeRIE{}
		rie := inMemoryRIE(t, fake)
		rie.grace = 50 * time.Millisecond
		invoke := func(body string) (Result, error) {
			return rie.Invoke(t.Context(), Invocation{Timeout: 100 * time.Millisecond, Payload: rieEvent(t, body)})
		}

		res, err := invoke("ok")
		require.NoError(t, err)
		require.Equal(t, StatusOK, res.Status)
		require.JSONEq(t, `{"batchItemFailures":null}`, string(res.Payload))

		res, err = invoke("error")
		require.NoError(t, err)
		require.Equal(t, StatusFunctionError, res.Status)

		start := time.Now()
		res, err = invoke("sleep")
		require.NoError(t, err)
		require.Equal(t, StatusTimeout, res.Status, "an emulator that does not answer by the deadline plus grace is a timeout")
		require.Equal(t, 150*time.Millisecond, time.Since(start), "the invoker gives up at the timeout plus the grace")

		for _, body := range []string{"exit", "oversized"} {
			res, err = invoke(body)
			require.NoError(t, err)
			require.Equal(t, StatusFunctionError, res.Status, "a 502 with an error document is the emulator's word for a failed invocation")
		}

		_, err = rie.Invoke(t.Context(), Invocation{Timeout: time.Second, Payload: []byte(`{"Records":[]}`)})
		require.Error(t, err, "a status other than 200 is an invocation that could not be made")
		_, err = invoke("bad gateway")
		require.Error(t, err, "so is a 502 without an error document")
	})
}

func TestRIEInvokeUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	_, err := newRIE(t, addr).Invoke(t.Context(), Invocation{Timeout: time.Second, Payload: rieEvent(t, "ok")})
	require.Error(t, err)
}

func TestRIESerialisesInvocations(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		fake := &fakeRIE{delay: 20 * time.Millisecond}
		rie := inMemoryRIE(t, fake)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Go(func() {
				res, err := rie.Invoke(t.Context(), Invocation{Timeout: 5 * time.Second, Payload: rieEvent(t, fmt.Sprint("ok-", i))})
				if err == nil && res.Status != StatusOK {
					err = errors.New(res.Status.String())
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, int32(1), fake.maxActive.Load(), "the emulator handles one invocation at a time")
	})
}

func TestFuncZeroTimeoutIsTheDefault(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var left time.Duration
		inv := Func(func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
			deadline, _ := ctx.Deadline()
			left = time.Until(deadline)
			return events.SQSEventResponse{}, nil
		})
		res, err := inv.Invoke(t.Context(), Invocation{Payload: sqsPayload(t, "a")})
		require.NoError(t, err)
		require.Equal(t, StatusOK, res.Status)
		require.Equal(t, DefaultFunctionTimeout, left)
	})
}

// TestRIEConcurrentInvocationsEachGetTheirFullTimeout: the emulator runs
// one invocation at a time; an invocation waiting for its turn does not
// spend its function's time budget.
func TestRIEConcurrentInvocationsEachGetTheirFullTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		rie := newSerialRIE(t, timeout) // each function takes 90% of the timeout
		require.Equal(t, 1, rie.MaxConcurrency())
		results := make(chan Result, 2)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				res, err := rie.Invoke(t.Context(), Invocation{Timeout: timeout, Payload: rieEvent(t, "ok")})
				if err != nil {
					res = Result{Status: StatusFunctionError, Payload: []byte(err.Error())}
				}
				results <- res
			})
		}
		wg.Wait()
		close(results)
		for res := range results {
			require.Equal(t, StatusOK, res.Status, "%s", res.Payload)
		}
	})
}

func TestRIEInvokeStopsWaitingOnCancel(t *testing.T) {
	t.Parallel()
	rie := newRIE(t, "127.0.0.1:1")
	rie.slot <- struct{}{} // another invocation holds the emulator
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := rie.Invoke(ctx, Invocation{Timeout: time.Second, Payload: rieEvent(t, "ok")})
	require.ErrorIs(t, err, context.Canceled)
}

// TestClaimWithholdsGroupsInFlightAndTakesOverReturnedOnes: a group held
// by a batch whose function still runs is withheld; one held by a batch
// whose function has returned (its deletes are on the way) is taken over,
// after that batch's settlement.
func TestClaimWithholdsGroupsInFlightAndTakesOverReturnedOnes(t *testing.T) {
	t.Parallel()
	msg := func(id, group string) sqstypes.Message {
		m := sqstypes.Message{MessageId: aws.String(id), ReceiptHandle: aws.String("rh-" + id), Attributes: map[string]string{receiveCountAttribute: "3"}}
		if group != "" {
			m.Attributes[groupAttribute] = group
		}
		return m
	}
	ids := func(msgs []sqstypes.Message) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, *m.MessageId)
		}
		return out
	}
	r := &sqsRun{groups: map[string]*sqsClaim{}, receipts: map[string]*receipt{}}

	b1 := r.claim("req-1", []sqstypes.Message{msg("a1", "a"), msg("b1", "b"), msg("a2", "a"), msg("s1", "")})
	require.Equal(t, []string{"a1", "b1", "a2", "s1"}, ids(b1.take), "one invocation may hold several messages of a group")
	require.Empty(t, b1.withheld)
	require.Empty(t, b1.after)

	b2 := r.claim("req-2", []sqstypes.Message{msg("a3", "a"), msg("c1", "c"), msg("a4", "a"), msg("s2", "")})
	require.Equal(t, []string{"c1", "s2"}, ids(b2.take))
	require.Equal(t, []WithheldMessage{{MessageID: "a3", GroupID: "a", ReceiveCount: 3}, {MessageID: "a4", GroupID: "a", ReceiveCount: 3}}, b2.withheld,
		"every message of a group whose invocation still runs is withheld")

	r.returned(b1) // its function has returned; its deletes are on the way
	b3 := r.claim("req-3", []sqstypes.Message{msg("a3", "a"), msg("c2", "c")})
	require.Equal(t, []string{"a3"}, ids(b3.take), "a group whose invocation has returned is taken over")
	require.Len(t, b3.after, 1)
	require.Equal(t, []WithheldMessage{{MessageID: "c2", GroupID: "c", ReceiveCount: 3}}, b3.withheld)
	select {
	case <-b3.after[0]:
		t.Fatal("the taken-over batch is settled before its predecessor's outcome was applied")
	default:
	}

	r.release(b1)
	<-b3.after[0] // closed: b3 may run
	require.Same(t, b3, r.groups["a"], "the group stays with the batch that took it over")
	b4 := r.claim("req-4", []sqstypes.Message{msg("b2", "b")})
	require.Equal(t, []string{"b2"}, ids(b4.take), "a released group is free")
	require.Empty(t, b4.after)
}
