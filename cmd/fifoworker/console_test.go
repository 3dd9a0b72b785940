package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func (f *fakeOpener) consoleSources(_ context.Context, t consoleTarget) (consoleParts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.consoleAsked = &t
	p := f.console
	p.DeadLetters = make([]console.Depth, len(t.DLQs))
	for i, u := range t.DLQs {
		if u != "" {
			p.DeadLetters[i] = &queueDepth{api: &fakeAttributes{}, url: u}
		}
	}
	return p, nil
}

const (
	commandsDLQ = "http://127.0.0.1:4566/000000000000/fw-commands-dlq.fifo"
	eventsDLQ   = "http://127.0.0.1:4566/000000000000/fw-events-dlq.fifo"
)

func TestConsoleRefusesABadAddrOrTransport(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // "" for accepted
	}{
		{[]string{"--addr", "8090"}, `--addr "8090" is not host:port`},
		{[]string{"--addr", "127.0.0.1:65536"}, `port "65536" is not 0 to 65535`},
		{[]string{"--addr", "127.0.0.1:-1"}, `port "-1" is not 0 to 65535`},
		{[]string{"--addr", "0.0.0.0:8090"}, "is not a loopback address"},
		{[]string{"--addr", ":8090"}, "is not a loopback address"},
		{[]string{"--addr", "192.0.2.1:8090"}, "pass --allow-non-loopback too"},
		{[]string{"--transport", "amqp"}, `--transport "amqp": sqs or kafka`},
		{nil, ""},
		{[]string{"--addr", "127.0.0.1:65535"}, ""},
		{[]string{"--addr", "127.0.0.1:0"}, ""},
		{[]string{"--addr", "localhost:8090"}, ""},
		{[]string{"--addr", "[::1]:8090"}, ""},
		{[]string{"--addr", "0.0.0.0:8090", "--allow-non-loopback"}, ""},
		{[]string{"--transport", "kafka", "--allow-actions", "--stack", "demo"}, ""},
	} {
		o := newTestOps(t)
		var out, errOut strings.Builder
		c := &cli{env: o.env, stdout: &out, stderr: &errOut}
		_, err := c.parse(append([]string{"console"}, tc.args...))
		if tc.want == "" {
			require.NoError(t, err, tc.args)
			require.IsType(t, &consoleOptions{}, c.chosen, tc.args)
			continue
		}
		require.ErrorContains(t, err, tc.want, tc.args)
		require.Equal(t, 2, exitCode(err), tc.args)
	}
}

// The console's Config holds each queue the environment names, with its
// quarantine and its dead-letter queue's depth; the other sources are
// asked for the bucket, the dead-letter queues and the commands queue's
// name, which CloudWatch knows it by.
func TestConsoleConfigHoldsTheQueuesTheEnvironmentNames(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	o.vars["FIFOWORKER_COMMANDS_DLQ_URL"], o.vars["FIFOWORKER_EVENTS_DLQ_URL"] = commandsDLQ, eventsDLQ
	opts := &consoleOptions{}
	cfg, err := opts.config(t.Context(), o.env)
	require.NoError(t, err)
	require.NotNil(t, cfg.Jobs)
	require.Equal(t, []string{"fw-jobs", "FIFOWORKER_JOBS_TABLE_NAME"}, o.open.jobsAsked)
	require.Len(t, cfg.Queues, 2)
	for i, name := range []string{"commands", "events"} {
		q := cfg.Queues[i]
		require.Equal(t, name, q.Name)
		require.NotNil(t, q.Quarantine, name)
		require.Equal(t, []string{commandsDLQ, eventsDLQ}[i], q.DeadLetters.(*queueDepth).url, name)
		require.Empty(t, q.NoRedrive, name)
		require.Empty(t, q.NoDiscard, name)
	}
	require.Equal(t, &consoleTarget{
		Bucket: "fw-candidates", BucketHint: "FIFOWORKER_CANDIDATES_BUCKET_NAME",
		DLQs: []string{commandsDLQ, eventsDLQ}, DLQHints: []string{"FIFOWORKER_COMMANDS_DLQ_URL", "FIFOWORKER_EVENTS_DLQ_URL"},
		CommandsQueue: "fw-commands.fifo",
	}, o.open.consoleAsked)

	// Only the commands queue, without a dead-letter queue named.
	delete(o.vars, "FIFOWORKER_EVENTS_QUEUE_URL")
	delete(o.vars, "FIFOWORKER_COMMANDS_DLQ_URL")
	cfg, err = opts.config(t.Context(), o.env)
	require.NoError(t, err)
	require.Len(t, cfg.Queues, 1)
	require.Equal(t, "commands", cfg.Queues[0].Name)
	require.Nil(t, cfg.Queues[0].DeadLetters)

	// On Kafka: the topics, no dead-letter queue, no CloudWatch metric.
	o.vars["FIFOWORKER_TRANSPORT"], o.vars["FIFOWORKER_COMMANDS_TOPIC"], o.vars["FIFOWORKER_EVENTS_TOPIC"] = "kafka", "fw-commands", "fw-events"
	cfg, err = opts.config(t.Context(), o.env)
	require.NoError(t, err)
	require.Len(t, cfg.Queues, 2)
	require.Nil(t, cfg.Queues[0].DeadLetters)
	require.Nil(t, cfg.Queues[1].DeadLetters)
	require.Equal(t, []string{"", ""}, o.open.consoleAsked.DLQs)
	require.Empty(t, o.open.consoleAsked.CommandsQueue)
	// ... and no redrive without the brokers, as the CLI refuses one.
	require.Equal(t, "a redrive on Kafka produces its copies: set KAFKA_BOOTSTRAP_SERVERS", cfg.Queues[0].NoRedrive)
	o.vars["KAFKA_BOOTSTRAP_SERVERS"] = "127.0.0.1:9092"
	cfg, err = opts.config(t.Context(), o.env)
	require.NoError(t, err)
	require.Empty(t, cfg.Queues[0].NoRedrive)
	require.Empty(t, cfg.Queues[1].NoRedrive)

	// No bucket: no discard (it archives what it drops), as the CLI.
	delete(o.vars, "FIFOWORKER_CANDIDATES_BUCKET_NAME")
	cfg, err = opts.config(t.Context(), o.env)
	require.NoError(t, err)
	require.Equal(t, "discard archives what it drops: set FIFOWORKER_CANDIDATES_BUCKET_NAME", cfg.Queues[0].NoDiscard)

	// A queue needs the quarantine table; the jobs table is required.
	delete(o.vars, "FIFOWORKER_QUARANTINE_TABLE_NAME")
	_, err = opts.config(t.Context(), o.env)
	require.ErrorContains(t, err, "no quarantine table for the commands' quarantine: set FIFOWORKER_QUARANTINE_TABLE_NAME")
	delete(o.vars, "FIFOWORKER_JOBS_TABLE_NAME")
	_, err = opts.config(t.Context(), o.env)
	require.ErrorContains(t, err, "no jobs table: set FIFOWORKER_JOBS_TABLE_NAME, or pass --stack NAME")
}

// The age of the oldest command is read from CloudWatch only on AWS:
// where the configuration gives CloudWatch an endpoint of its own (a local
// stack: AWS_ENDPOINT_URL, or --stack's env file), it is nil, and the
// console says it is unavailable. Neither opening sends a request.
func TestConsoleReadsTheOldestCommandFromCloudWatchOnlyOnAWS(t *testing.T) {
	t.Parallel()
	opener := func(cfg aws.Config) awsOpener {
		return awsOpener{load: func(context.Context) (aws.Config, error) { return cfg, nil }}
	}
	target := consoleTarget{CommandsQueue: "fw-commands.fifo"}
	p, err := opener(aws.Config{Region: "eu-west-1", BaseEndpoint: aws.String("http://127.0.0.1:4566")}).consoleSources(t.Context(), target)
	require.NoError(t, err)
	require.Nil(t, p.OldestCommand, "AWS_ENDPOINT_URL")
	const local = "unavailable: SQS has its own endpoint (a local stack); the console reads CloudWatch only where SQS is AWS's default endpoint"
	require.Equal(t, local, p.NoOldestCommand)
	// A local stack's env file (--stack) gives each service its endpoint,
	// and CloudWatch none: the commands queue is the emulator's all the same.
	stack := startup.NewEnvFrom(map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:46115", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:41383",
		"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:41769",
	})
	stackCfg := stack.AWSConfig()
	require.NoError(t, stack.Err())
	p, err = opener(stackCfg).consoleSources(t.Context(), target)
	require.NoError(t, err)
	require.Nil(t, p.OldestCommand, "a stack's env file")
	require.Equal(t, local, p.NoOldestCommand)

	p, err = opener(aws.Config{Region: "eu-west-1"}).consoleSources(t.Context(), target)
	require.NoError(t, err)
	require.IsType(t, &commandAge{}, p.OldestCommand)
	require.Equal(t, "fw-commands.fifo", p.OldestCommand.(*commandAge).queue)
	require.Empty(t, p.NoOldestCommand)

	p, err = opener(aws.Config{Region: "eu-west-1"}).consoleSources(t.Context(), consoleTarget{})
	require.NoError(t, err)
	require.Nil(t, p.OldestCommand, "no commands queue (Kafka): no metric")
	require.Equal(t, "no commands queue on Kafka", p.NoOldestCommand)
}

// lines passes each line written to it to a channel.
type lines struct {
	w *io.PipeWriter
	c chan string
}

func newLines(t *testing.T) *lines {
	t.Helper()
	r, w := io.Pipe()
	l := &lines{w: w, c: make(chan string, 16)}
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			l.c <- s.Text()
		}
		close(l.c)
	}()
	t.Cleanup(func() { _ = w.Close() })
	return l
}

func (l *lines) Write(p []byte) (int, error) { return l.w.Write(p) }

// `fifoworker console` prints one line with its URL; the token in it is
// the one the console accepts, and the line says whether actions are
// allowed. Cancelling the context (as SIGINT does) stops it cleanly.
func TestConsolePrintsAURLWhoseTokenTheConsoleAccepts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		mode string
	}{
		{nil, "read-only: --allow-actions enables redrive and discard"},
		{[]string{"--allow-actions"}, "actions allowed: redrive and discard, each confirmed"},
	} {
		o := newTestOps(t)
		stdout := newLines(t)
		var stderr strings.Builder
		c := &cli{env: o.env, stdout: stdout, stderr: &stderr}
		_, err := c.parse(append([]string{"console", "--addr", "127.0.0.1:0"}, tc.args...))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.runChosen(ctx) }()

		printed := <-stdout.c
		require.Regexp(t, `^fifoworker console: http://127\.0\.0\.1:[1-9][0-9]*/\?token=[0-9a-f]{64} \(`+regexp.QuoteMeta(tc.mode)+`; Ctrl-C stops it\)$`, printed)
		u, err := url.Parse(strings.Fields(printed)[2])
		require.NoError(t, err)
		status, body := browse(t, u.String())
		require.Equal(t, http.StatusOK, status, "the printed URL lets the browser in")
		require.Contains(t, body, "commands", "the overview, with the queues")
		forged := *u
		forged.RawQuery = url.Values{console.TokenParam: {strings.Repeat("0", 64)}}.Encode()
		status, _ = browse(t, forged.String())
		require.Equal(t, http.StatusUnauthorized, status)
		bare := *u
		bare.RawQuery = ""
		status, _ = browse(t, bare.String())
		require.Equal(t, http.StatusUnauthorized, status)

		cancel()
		require.NoError(t, <-done)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u.String(), nil)
		require.NoError(t, err)
		_, err = http.DefaultClient.Do(req) //nolint:bodyclose // it fails: the server is gone
		require.Error(t, err, "stopped")
		require.Empty(t, stderr.String())
	}
}

// browse GETs u as a browser of its own would (cookies, redirects) and
// returns the last answer's status and body.
func browse(t *testing.T, u string) (int, string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Jar: jar}).Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// A stopping console with actions waits long enough for a redrive to run
// to its own timeout; what it waits for, or interrupted, it says with how
// to resume.
func TestAStoppingConsoleWaitsForARedriveOrSaysHowToResume(t *testing.T) {
	t.Parallel()
	require.Equal(t, consoleGrace, consoleStopGrace(false))
	require.Greater(t, consoleStopGrace(true), console.DefaultRedriveTimeout, "a redrive in flight reaches its own timeout first")
	running := []string{"a redrive of group g on commands"}
	require.Equal(t, "fifoworker console: stopping: waiting up to 5m10s for a redrive of group g on commands to finish (Ctrl-C again stops at once: redrive again to resume)",
		consoleWaitNotice(running, consoleStopGrace(true)))
	require.Contains(t, consoleInterruptedNotice(running), "interrupted a redrive of group g on commands: redrive again to resume")
}

// The console's (and local serve's) server bounds a slow client's request
// and an idle connection, and has no WriteTimeout (a redrive's answer
// comes once its sends are done).
func TestTheServersTimeoutsAreSet(t *testing.T) {
	t.Parallel()
	srv := newServer(t.Context(), http.NotFoundHandler())
	require.Equal(t, 10*time.Second, srv.ReadHeaderTimeout)
	require.Equal(t, time.Minute, srv.ReadTimeout)
	require.Equal(t, 2*time.Minute, srv.IdleTimeout)
	require.Zero(t, srv.WriteTimeout)
}
