package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

const (
	testToken  = "t0ken-of-this-run-0123456789"
	testAddr   = "127.0.0.1:8090"
	testBucket = "candidates-test"
	unitARN    = "arn:aws:sqs:eu-west-1:123456789012:unit.fifo"
)

// testBundle is a console over the memory stores, with what a test needs
// to put data in them and look at them afterwards.
type testBundle struct {
	console *console.Console
	cfg     console.Config
	clock   *jobstest.Clock
	jobs    *jobs.MemoryStore
	cands   *candidate.Store
	s3      *s3mem.S3
	holds   *quarantine.MemoryStore
	q       *quarantine.Quarantine
	sends   *quarantinetest.Sends
	sweeps  *fakeSweeps
	dlq     *fakeDepth
}

type fakeSweeps struct {
	run sweeper.LastRun
	err error
}

func (f *fakeSweeps) LastRun(context.Context) (sweeper.LastRun, error) { return f.run, f.err }

type fakeDepth struct{ n int64 }

func (f *fakeDepth) Depth(context.Context) (int64, error) { return f.n, nil }

type fakeOldest struct {
	age time.Duration
	err error
}

func (f fakeOldest) OldestCommandAge(context.Context) (time.Duration, error) { return f.age, f.err }

// fakeResults signs a link that names the result and its ttl.
type fakeResults struct{}

func (fakeResults) PresignGet(_ context.Context, r jobs.Result, ttl time.Duration) (string, error) {
	return "https://bucket.example/" + r.Key + "?X-Amz-Expires=" + strconv.Itoa(int(ttl.Seconds())), nil
}

// setup makes a console with every source over the memory stores;
// change, when set, edits its Config first.
func setup(t testing.TB, change func(*console.Config)) *testBundle {
	t.Helper()
	b := &testBundle{clock: jobstest.NewClock(jobstest.Start), sweeps: &fakeSweeps{err: sweeper.ErrNoLastRun}, dlq: &fakeDepth{n: 3}}
	var err error
	b.jobs, err = jobs.NewMemoryStore(jobs.Config{Now: b.clock.Now})
	require.NoError(t, err)
	b.s3, err = s3mem.New(s3mem.Config{Buckets: []string{testBucket}, Now: b.clock.Now})
	require.NoError(t, err)
	b.cands, err = candidate.New(candidate.Config{Client: b.s3, Bucket: testBucket})
	require.NoError(t, err)
	b.holds = quarantine.NewMemoryStore()
	b.q, err = quarantine.New(quarantine.Config{Store: b.holds, QueueARN: unitARN, Now: b.clock.Now})
	require.NoError(t, err)
	bodies, err := quarantine.NewS3Bodies(quarantine.S3BodiesConfig{Client: b.s3, Bucket: testBucket})
	require.NoError(t, err)
	b.sends = &quarantinetest.Sends{}
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: b.holds, Queue: "unit.fifo",
		QueueURL: "http://127.0.0.1:1/q/unit.fifo", Sender: b.sends, Bodies: bodies, Now: b.clock.Now})
	require.NoError(t, err)
	b.cfg = console.Config{
		Jobs: b.jobs, Candidates: b.cands, Results: fakeResults{},
		Queues: []console.Queue{{Name: "commands", Quarantine: op, DeadLetters: b.dlq}, {Name: "events"}},
		Sweeps: b.sweeps, Token: testToken, Addr: testAddr, Now: b.clock.Now,
	}
	if change != nil {
		change(&b.cfg)
	}
	b.console, err = console.New(b.cfg)
	require.NoError(t, err)
	return b
}

// request is a request to the console from the browser that holds the
// session cookie (the token presented once).
func (b *testBundle) request(method, target string, form url.Values) *http.Request {
	var r *http.Request
	if form != nil {
		r = httptest.NewRequest(method, target, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, target, nil)
	}
	r.Host = testAddr
	r.AddCookie(b.cookie())
	return r
}

// cookie is the session cookie the console gives for its token.
func (b *testBundle) cookie() *http.Cookie {
	r := httptest.NewRequest(http.MethodGet, "/?"+console.TokenParam+"="+testToken, nil)
	r.Host = b.cfg.Addr
	w := httptest.NewRecorder()
	b.console.ServeHTTP(w, r)
	for _, c := range w.Result().Cookies() {
		if c.Name == b.console.CookieName() {
			return c
		}
	}
	panic("the console gave no session cookie for its token")
}

func (b *testBundle) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	b.console.ServeHTTP(w, r)
	return w
}

// get answers GET target; it requires status.
func (b *testBundle) get(t testing.TB, target string, status int) string {
	t.Helper()
	w := b.serve(b.request(http.MethodGet, target, nil))
	require.Equal(t, status, w.Code, "GET %s: %s", target, w.Body.String())
	return w.Body.String()
}

// post answers POST target with form; it requires status.
func (b *testBundle) post(t testing.TB, target string, form url.Values, status int) string {
	t.Helper()
	w := b.serve(b.request(http.MethodPost, target, form))
	require.Equal(t, status, w.Code, "POST %s: %s", target, w.Body.String())
	return w.Body.String()
}

// create makes a pending job of tenant.
func (b *testBundle) create(t testing.TB, id, tenant string) jobs.Job {
	t.Helper()
	res, err := b.jobs.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: tenant, Spec: map[string]string{"task": "count"}})
	require.NoError(t, err)
	return res.Job
}

// claim claims j as attempt, a minute's lease.
func (b *testBundle) claim(t testing.TB, id, attempt string) jobs.Job {
	t.Helper()
	j, err := b.jobs.Claim(t.Context(), jobs.ClaimRequest{JobID: id, AttemptID: attempt, LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	return j
}

// candidate writes attempt's candidate of j's generation.
func (b *testBundle) candidate(t testing.TB, j jobs.Job, body string) candidate.Result {
	t.Helper()
	k, err := candidate.NewKey(j.ID, j.Generation, j.LeaseOwner, "json")
	require.NoError(t, err)
	res, err := b.cands.Put(t.Context(), k, strings.NewReader(body))
	require.NoError(t, err)
	return res
}

// storyJob is a job whose first generation's lease ran out after it
// wrote a candidate, taken over by a second that renewed, wrote its own
// and was accepted: every kind of mark the job page draws but the end
// states of failure and cancellation.
func (b *testBundle) storyJob(t testing.TB, id string, renewals int) jobs.Job {
	t.Helper()
	b.create(t, id, "acme")
	b.clock.Advance(time.Second)
	j := b.claim(t, id, "attempt-a")
	b.clock.Advance(10 * time.Second)
	b.candidate(t, j, `{"n":1}`)
	b.clock.Advance(2 * time.Minute) // the lease runs out
	j = b.claim(t, id, "attempt-b")
	for range renewals {
		b.clock.Advance(5 * time.Second)
		var err error
		j, err = b.jobs.Renew(t.Context(), jobs.RenewRequest{JobID: id, AttemptID: "attempt-b", Generation: j.Generation, Version: j.Version,
			LeaseUntil: b.clock.Now().Add(time.Minute), Progress: 1})
		require.NoError(t, err)
	}
	b.clock.Advance(3 * time.Second)
	res := b.candidate(t, j, `{"n":2}`)
	b.clock.Advance(time.Second)
	j, err := b.jobs.Accept(t.Context(), jobs.AcceptRequest{JobID: id, AttemptID: "attempt-b", Generation: j.Generation, Version: j.Version,
		Result: jobs.Result{Key: res.Key.String(), SHA256: res.SHA256, Size: res.Size}, Progress: 2})
	require.NoError(t, err)
	return j
}

// sqsMsg is message n of group g, with SequenceNumber 1000+n.
func sqsMsg(g string, n int, body string) *events.SQSMessage {
	seq := strconv.Itoa(1000 + n)
	return &events.SQSMessage{
		MessageId: fmt.Sprintf("%s-%d", g, n), Body: body, EventSourceARN: unitARN,
		Attributes: map[string]string{
			"MessageGroupId": g, "SequenceNumber": seq, "MessageDeduplicationId": "d-" + seq, "ApproximateReceiveCount": "4",
		},
	}
}

// hold parks n messages of group g, held because the first failed.
func (b *testBundle) hold(t testing.TB, g string, n int) {
	t.Helper()
	var msgs []*events.SQSMessage
	for i := 1; i <= n; i++ {
		msgs = append(msgs, sqsMsg(g, i, fmt.Sprintf(`{"job_id":"%s","n":%d}`, g, i)))
	}
	_, err := b.q.Park(t.Context(), g, msgs, errors.New("boom: the handler failed"), true)
	require.NoError(t, err)
}
