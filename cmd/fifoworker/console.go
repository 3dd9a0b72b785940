package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

const consoleLong = `The operator's web console: the jobs by status, one job with its result and its
history drawn as a timeline, the held groups of each queue with their parked
messages, the dead-letter queues' depths and the sweeper's last run. It reads
through the same code as the jobs, quarantine and sweep commands, from the
same place (--stack, or the FIFOWORKER_* variables and the SDK's standard
configuration): the jobs table (FIFOWORKER_JOBS_TABLE_NAME, required), the
candidates bucket (results, candidates, the sweeper's last run), each queue
the environment names with its quarantine and its dead-letter queue
(FIFOWORKER_COMMANDS_QUEUE_URL and _DLQ_URL, the events' likewise; on Kafka
the topics), and, on a deployment, the age of the oldest command from
CloudWatch (cloudwatch:GetMetricData; on a local stack it is shown as
unavailable, never read by receiving from the queue).

It prints one line with its URL, which carries a token made for this run: the
console answers only a browser that presented it, and only requests addressed
to its own address (a DNS-rebinding page is refused). It is read-only unless
--allow-actions: then redrive and discard, each a confirmed form.

It listens on loopback. A non-loopback --addr is refused unless
--allow-non-loopback is given too: the console speaks plain HTTP, so its token
and every tenant's jobs would cross the network in clear (reach a remote
console with ssh -L instead).

SIGINT (Ctrl-C) or SIGTERM stops it, letting requests in flight finish: with
--allow-actions a redrive in flight runs to its end or its own timeout (5
minutes; the console says on stderr what it waits for). A second Ctrl-C (or
SIGTERM) stops at once; the console then says what it interrupted: redrive
again to resume. Exit status: 0 stopped, 1 failed (a missing table, queue or
bucket, an address in use) or stopped at once by a second signal, 2 a usage
error.`

// consoleGrace is how long a stopping console lets requests in flight
// finish.
const consoleGrace = 10 * time.Second

// consoleOptions are `fifoworker console`'s.
type consoleOptions struct {
	Addr         string
	AllowActions bool // redrive and discard
	AllowRemote  bool // an --addr that is not loopback
	Stack        string
	Transport    string // sqs or kafka; "": FIFOWORKER_TRANSPORT, else sqs
}

func (c *cli) consoleCmd() *cobra.Command {
	o := &consoleOptions{}
	cmd := &cobra.Command{
		Use: "console", Short: "the operator's web console on loopback (jobs, timelines, held groups, redrive)", Long: consoleLong,
		Args: noArgs, RunE: c.choose(o, nil),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8090", "where to listen, `host:port` (port 0: any free one)")
	fs.BoolVar(&o.AllowActions, "allow-actions", false, "enable redrive and discard (default: read-only)")
	fs.BoolVar(&o.AllowRemote, "allow-non-loopback", false, "let --addr be an address that is not loopback (plain HTTP: the token crosses the network in clear)")
	fs.StringVar(&o.Transport, "transport", "", "the deployment's transport, `sqs|kafka` (default: FIFOWORKER_TRANSPORT, else sqs)")
	bindStackFlag(fs, &o.Stack)
	_ = cmd.RegisterFlagCompletionFunc("transport", cobra.FixedCompletions([]cobra.Completion{"sqs", "kafka"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (o *consoleOptions) Validate() error {
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("--addr %q is not host:port", o.Addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("--addr %q: port %q is not 0 to 65535", o.Addr, port)
	}
	if !loopbackHost(host) && !o.AllowRemote {
		return fmt.Errorf("--addr %q is not a loopback address: the console speaks plain HTTP, so its token and every tenant's jobs would cross the network in clear; "+
			"pass --allow-non-loopback too to listen there anyway, or reach a loopback console with ssh -L", o.Addr)
	}
	return (&queueFlags{Queue: "commands", Transport: o.Transport}).Validate()
}

// loopbackHost reports whether host, an --addr's, is a loopback address
// or localhost. An empty host is every interface.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Run starts the console and serves it. A Ctrl-C before it serves ends
// the process as Go's default does (nothing runs yet); from then on the
// console takes SIGINT and SIGTERM itself (serveConsole).
func (o *consoleOptions) Run(ctx context.Context, c *cli) error {
	log := cliLogger(c.stderr, false)
	env, err := c.env.targetOf(o.Stack, log, c.stderr)
	if err != nil {
		return err
	}
	cfg, err := o.config(ctx, env)
	if err != nil {
		return err
	}
	token, err := consoleToken()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	cfg.Token, cfg.Addr, cfg.AllowActions, cfg.Logger = token, ln.Addr().String(), o.AllowActions, log
	h, err := console.New(cfg)
	if err != nil {
		_ = ln.Close()
		return err
	}
	if host, _, _ := net.SplitHostPort(o.Addr); !loopbackHost(host) {
		fmt.Fprintf(c.stderr, "fifoworker console: warning: listening on %s, beyond loopback, in plain HTTP: whoever sees the token on the network reads every tenant's jobs\n", ln.Addr())
	}
	mode := "read-only: --allow-actions enables redrive and discard"
	if o.AllowActions {
		mode = "actions allowed: redrive and discard, each confirmed"
	}
	fmt.Fprintf(c.stdout, "fifoworker console: %s (%s; Ctrl-C stops it)\n", consoleURL(ln.Addr(), token), mode)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return serveConsole(ctx, sigs, ln, h, consoleStopGrace(o.AllowActions), c.stderr)
}

// consoleHandler is the console as serveConsole serves it.
type consoleHandler interface {
	http.Handler
	InFlight() []string
}

// serveConsole serves h on ln until ctx ends or a first signal comes on
// sigs, then stops, letting what is in flight (a redrive) finish within
// grace and saying on stderr what it waits for. It keeps listening: a
// second signal stops waiting, and it says what it interrupted and how to
// resume before it returns (Go's default SIGINT handling, restored, would
// end the process before it could say so).
func serveConsole(ctx context.Context, sigs <-chan os.Signal, ln net.Listener, h consoleHandler, grace time.Duration, stderr io.Writer) error {
	gentle, stopGently := context.WithCancel(ctx)
	defer stopGently()
	now, stopNow := context.WithCancel(context.WithoutCancel(ctx))
	defer stopNow()
	var second atomic.Bool
	go func() {
		select {
		case <-sigs:
			stopGently()
		case <-gentle.Done():
		}
		select {
		case <-sigs:
			second.Store(true)
			stopNow()
		case <-now.Done():
		}
	}()
	err := serveUntilStopped(gentle, now, ln, h, grace, func() {
		if running := h.InFlight(); len(running) > 0 {
			fmt.Fprintln(stderr, consoleWaitNotice(running, grace))
		}
	})
	if running := h.InFlight(); err != nil && len(running) > 0 {
		fmt.Fprintln(stderr, consoleInterruptedNotice(running))
	}
	if err != nil && second.Load() {
		return fmt.Errorf("console: stopped at once by a second signal: %w", err)
	}
	return err
}

// consoleStopGrace is how long a stopping console lets requests in flight
// finish: with actions, long enough for a redrive to run to its own
// timeout (console.DefaultRedriveTimeout), so a stop does not cut one
// short.
func consoleStopGrace(allowActions bool) time.Duration {
	if allowActions {
		return console.DefaultRedriveTimeout + consoleGrace
	}
	return consoleGrace
}

// consoleWaitNotice says what a stopping console waits for.
func consoleWaitNotice(running []string, grace time.Duration) string {
	return fmt.Sprintf("fifoworker console: stopping: waiting up to %v for %s to finish (Ctrl-C again stops at once: redrive again to resume)",
		grace, strings.Join(running, ", "))
}

// consoleInterruptedNotice says what a console that stopped before its
// actions finished interrupted, and how to resume.
func consoleInterruptedNotice(running []string) string {
	return fmt.Sprintf("fifoworker console: interrupted %s: redrive again to resume (its group's page, or fifoworker quarantine redrive GROUP --queue QUEUE): a new epoch sends every message still parked",
		strings.Join(running, ", "))
}

// consoleToken is a run's secret: 32 bytes from crypto/rand, in hex.
func consoleToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("console: a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// consoleURL is the URL a browser opens the console at: on loopback when
// the listener is on every interface.
func consoleURL(addr net.Addr, token string) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/", RawQuery: url.Values{console.TokenParam: {token}}.Encode()}
	return u.String()
}

// serveUntil serves h on ln until ctx ends, then stops the server, letting
// requests in flight finish within grace; stopping, when set, is called
// first. `local serve` serves the jobs API with it too.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration, stopping func()) error {
	return serveUntilStopped(ctx, context.WithoutCancel(ctx), ln, h, grace, stopping)
}

// serveUntilStopped is serveUntil that also stops waiting for requests in
// flight once now ends (a second Ctrl-C).
func serveUntilStopped(ctx, now context.Context, ln net.Listener, h http.Handler, grace time.Duration, stopping func()) error {
	srv := newServer(ctx, h)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	if stopping != nil {
		stopping()
	}
	shutdown, cancel := context.WithTimeout(now, grace)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("stop the server: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// newServer is serveUntil's server of h. A client that sends its request
// slowly is cut off: the header within ReadHeaderTimeout, the whole
// request (the console's forms are at most 16 KiB, the jobs API's bodies
// small JSON) within ReadTimeout; an idle keep-alive connection is closed
// after IdleTimeout. It has no WriteTimeout on purpose: a console's
// redrive answers only once its sends are done (up to its own 5-minute
// timeout), and a WriteTimeout would cut that answer off.
func newServer(ctx context.Context, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}

// config is the console's Config from env, but for its Token, Addr,
// AllowActions and Logger: the jobs table (required), the candidates
// bucket's sources when it is named, and each queue env names.
func (o *consoleOptions) config(ctx context.Context, env opsEnv) (console.Config, error) {
	table := env.getenv(outputVar("JobsTableName"))
	if table == "" {
		return console.Config{}, fmt.Errorf("no jobs table: set %s%s", outputVar("JobsTableName"), o.elsewhere(env))
	}
	jobsStore, err := env.open.jobsStore(ctx, table, env.hint("", "", "JobsTableName"))
	if err != nil {
		return console.Config{}, err
	}
	cfg := console.Config{Jobs: jobsStore}
	qf := queueFlags{Transport: o.Transport}
	kafka, err := qf.kafka(env)
	if err != nil {
		return console.Config{}, err
	}
	t := consoleTarget{Bucket: env.getenv(outputVar("CandidatesBucketName")), BucketHint: env.hint("", "", "CandidatesBucketName")}
	for _, name := range []string{"commands", "events"} {
		qf.Queue = name
		if env.getenv(outputVar(qf.output(kafka))) == "" {
			continue
		}
		if env.getenv(outputVar("QuarantineTableName")) == "" {
			return console.Config{}, fmt.Errorf("no quarantine table for the %s' quarantine: set %s%s", name, outputVar("QuarantineTableName"), o.elsewhere(env))
		}
		op, qt, err := qf.operatorIn(ctx, env, false, nil)
		if err != nil {
			return console.Config{}, err
		}
		cfg.Queues = append(cfg.Queues, console.Queue{Name: name, Quarantine: op, NoRedrive: noRedrive(qt), NoDiscard: noDiscard(qt)})
		dlq := ""
		if !kafka {
			dlq = env.getenv(outputVar(dlqOutputs[name]))
		}
		t.DLQs, t.DLQHints = append(t.DLQs, dlq), append(t.DLQHints, env.hint("", "", dlqOutputs[name]))
		if name == "commands" && !kafka {
			t.CommandsQueue = qt.Queue
		}
	}
	src, err := env.open.consoleSources(ctx, t)
	if err != nil {
		return console.Config{}, err
	}
	for i := range cfg.Queues {
		cfg.Queues[i].DeadLetters = src.DeadLetters[i]
	}
	cfg.Candidates, cfg.Results, cfg.Sweeps = src.Candidates, src.Results, src.Sweeps
	cfg.OldestCommand, cfg.NoOldestCommand = src.OldestCommand, src.NoOldestCommand
	return cfg, nil
}

// noRedrive says why the console cannot redrive on t, as the quarantine
// redrive command refuses one: a Kafka topic without brokers.
func noRedrive(t quarantineTarget) string {
	if t.Kafka && len(t.Brokers) == 0 {
		return "a redrive on Kafka produces its copies: set KAFKA_BOOTSTRAP_SERVERS"
	}
	return ""
}

// noDiscard says why the console cannot discard on t, as the quarantine
// discard command refuses one: no bucket for its archive.
func noDiscard(t quarantineTarget) string {
	if t.Bucket == "" {
		return "discard archives what it drops: set FIFOWORKER_CANDIDATES_BUCKET_NAME"
	}
	return ""
}

// dlqOutputs are the template's outputs naming each queue's dead-letter
// queue.
var dlqOutputs = map[string]string{"commands": "CommandsDLQUrl", "events": "EventsDLQUrl"}

// elsewhere is how else the operator may name a resource: another stack.
func (o *consoleOptions) elsewhere(env opsEnv) string {
	if env.origin != "" {
		return " (" + env.origin + " sets none; --stack NAME picks another)"
	}
	return ", or pass --stack NAME for a local stack (fifoworker local serve, or eval \"$(fifoworker local deploy)\", gives them)"
}

// consoleTarget is what the console reads beside the jobs and the
// quarantines (opener.consoleSources).
type consoleTarget struct {
	// Bucket is the candidates bucket ("" none: no candidates, result
	// links or last sweep); BucketHint says where its name came from.
	Bucket, BucketHint string
	// DLQs are the dead-letter queues' URLs, one per console queue in
	// order ("" for a queue without one); DLQHints say where each came
	// from.
	DLQs, DLQHints []string
	// CommandsQueue is the commands queue's name, whose oldest message's
	// age CloudWatch has ("" none: a Kafka deployment).
	CommandsQueue string
}

// consoleParts are the sources consoleSources opens; nil where the target
// names nothing.
type consoleParts struct {
	Candidates    console.Candidates
	Results       console.Results
	Sweeps        console.Sweeps
	DeadLetters   []console.Depth // one per consoleTarget.DLQs
	OldestCommand console.OldestCommand
	// NoOldestCommand says why OldestCommand is nil.
	NoOldestCommand string
}

// consoleSources opens t's sources after checking that the bucket and the
// dead-letter queues exist. The age of the oldest command is read from
// CloudWatch only on AWS: where the configuration gives SQS an endpoint of
// its own (AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_SQS, as a local stack's
// env file does: --stack), the queue is an emulator's, CloudWatch has no
// metric of it, and the console says the age is unavailable.
func (o awsOpener) consoleSources(ctx context.Context, t consoleTarget) (consoleParts, error) {
	cfg, err := o.load(ctx)
	if err != nil {
		return consoleParts{}, err
	}
	var p consoleParts
	if t.Bucket != "" {
		s3c := lambdawire.S3(cfg)
		if err := checkBucket(ctx, s3c, t.Bucket, t.BucketHint); err != nil {
			return consoleParts{}, err
		}
		if p.Candidates, err = candidate.New(candidate.Config{Client: s3c, Bucket: t.Bucket}); err != nil {
			return consoleParts{}, err
		}
		if p.Results, err = lambdawire.ResultPresigner(cfg, t.Bucket); err != nil {
			return consoleParts{}, err
		}
		if p.Sweeps, err = sweeper.NewS3LastRun(sweeper.S3LastRunConfig{Client: s3c, Bucket: t.Bucket}); err != nil {
			return consoleParts{}, err
		}
	}
	queues := sqs.NewFromConfig(cfg)
	p.DeadLetters = make([]console.Depth, len(t.DLQs))
	for i, u := range t.DLQs {
		if u == "" {
			continue
		}
		if err := checkQueue(ctx, queues, u, t.DLQHints[i]); err != nil {
			return consoleParts{}, err
		}
		p.DeadLetters[i] = &queueDepth{api: queues, url: u}
	}
	// The metric is the commands queue's: a queue on an emulator has none.
	switch _, local := startup.ServiceEndpoint(cfg, sqs.ServiceID); {
	case t.CommandsQueue == "":
		p.NoOldestCommand = "no commands queue on Kafka"
	case local:
		p.NoOldestCommand = "unavailable: SQS has its own endpoint (a local stack); the console reads CloudWatch only where SQS is AWS's default endpoint"
	default:
		p.OldestCommand = &commandAge{api: cloudwatch.NewFromConfig(cfg), queue: t.CommandsQueue, now: time.Now}
	}
	return p, nil
}

var (
	_ console.Jobs       = jobsStore(nil)
	_ console.Quarantine = (*quarantine.Operator)(nil)
	_ console.Sweeps     = (*sweeper.S3LastRun)(nil)
)
