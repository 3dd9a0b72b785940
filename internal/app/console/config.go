package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// ErrInvalidConfig is wrapped by New's error for a Config that cannot
// work; the message names the fields.
var ErrInvalidConfig = errors.New("console: invalid configuration")

// MinTokenLength is the shortest Token New accepts: a per-run secret
// shorter than that could be guessed by another local process.
const MinTokenLength = 16

// DefaultResultLinkTTL is Config.ResultLinkTTL's default: a download
// link lives long enough to be clicked, and not much longer.
const DefaultResultLinkTTL = 15 * time.Minute

// MaxResultLinkTTL is the longest ResultLinkTTL: a link is a bearer
// credential for the result's bytes.
const MaxResultLinkTTL = time.Hour

// DefaultRedriveTimeout is Config.RedriveTimeout's default: long enough
// to send a few thousand parked messages one at a time (each send waits
// for the previous one's answer, tens of milliseconds on SQS).
const DefaultRedriveTimeout = 5 * time.Minute

// MaxRedriveTimeout is the longest RedriveTimeout: a stopping console
// waits for a redrive in flight that long.
const MaxRedriveTimeout = 30 * time.Minute

// DefaultLiveCountLimit is Config.LiveCountLimit's default: the overview
// counts the live jobs by status on the 250 least recently changed, which
// it reads in 3 BatchGetItems of statuses; it renders in under 100 ms on
// the local stack with 1,000 live jobs (make bench-console), where 1,000
// took 175 ms (docs/CONSOLE.md).
const DefaultLiveCountLimit = 250

// DefaultSourceTimeout is Config.SourceTimeout's default: a source that
// has not answered the overview by then shows its error in its own panel.
const DefaultSourceTimeout = 2 * time.Second

// queueName is what a Queue's Name may be: it is a segment of the
// quarantine pages' URLs.
var queueName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,80}$`)

// Config configures a Console.
type Config struct {
	// Jobs is the job store the jobs pages and the overview read.
	// Required.
	Jobs Jobs
	// Candidates lists a job's candidates. Default (nil): the job page
	// says the candidates are not configured.
	Candidates Candidates
	// Results signs a result's download link. Default (nil): the job page
	// shows the result without a link, saying why.
	Results Results
	// Queues are the queues whose held groups and dead-letter depths are
	// shown, in this order; each Name is unique and matches
	// [A-Za-z0-9_.-]{1,80}. Default (none): the overview says no queue is
	// configured.
	Queues []Queue
	// OldestCommand reads the age of the oldest command. Default (nil):
	// the overview says it is unavailable (a local stack has no
	// CloudWatch).
	OldestCommand OldestCommand
	// NoOldestCommand says why OldestCommand is nil where the console
	// runs ("no commands queue on Kafka"), shown in its place. Default
	// (""): "unavailable: no CloudWatch source configured".
	NoOldestCommand string
	// Sweeps reads the sweeper's last report. Default (nil): the overview
	// says it is not configured.
	Sweeps Sweeps
	// Token is this run's secret, which the browser presents once
	// (/?token=...) and then as a cookie, or a script as a bearer token.
	// Required, at least MinTokenLength characters.
	Token string
	// Addr is the address the console listens on, host:port with the
	// port the listener got (never 0). Requests whose Host header is not
	// Addr, 127.0.0.1:port, localhost:port or [::1]:port are refused, so a
	// page of another site that a DNS name rebinds to loopback cannot read
	// the console. Required.
	Addr string
	// AllowActions enables redrive and discard. Default (false): the
	// console is read-only.
	AllowActions bool
	// ResultLinkTTL is how long a result's download link works. Default
	// (zero): DefaultResultLinkTTL; at most MaxResultLinkTTL.
	ResultLinkTTL time.Duration
	// RedriveTimeout bounds a redrive the console runs. A redrive sends
	// each parked message in turn; it runs apart from its request, so a
	// browser that goes away does not cut it short, and stops at this
	// timeout, saying how far it got (a redrive run again resumes).
	// Default (zero): DefaultRedriveTimeout; at most MaxRedriveTimeout.
	RedriveTimeout time.Duration
	// SourceTimeout bounds each source the overview reads (the live
	// jobs, each queue's holds and dead-letter depth, the oldest command,
	// the last sweep); they are read together, and one that has not
	// answered by then shows its error in its own panel. Default (zero):
	// DefaultSourceTimeout; at most a minute.
	SourceTimeout time.Duration
	// LiveCountLimit is how many live jobs, least recently changed first,
	// the overview counts by status; past it the counts are shown as
	// lower bounds ("250 or more"). Default (zero): DefaultLiveCountLimit;
	// 1 to jobs.MaxListLimit.
	LiveCountLimit int
	// Now is the clock of the pages' "now" and of the listings' bounds.
	// Default (nil): time.Now.
	Now func() time.Time
	// Logger receives the errors of the sources the pages read. Default
	// (nil): discarded.
	Logger *slog.Logger
}

// Validate reports every field of c that cannot work, treating zero
// fields as their defaults, wrapping ErrInvalidConfig.
func (c *Config) Validate() error {
	var problems []string
	if c.Jobs == nil {
		problems = append(problems, "Jobs is nil")
	}
	if len(c.Token) < MinTokenLength {
		problems = append(problems, fmt.Sprintf("Token has %d characters, fewer than %d", len(c.Token), MinTokenLength))
	}
	if p := addrProblem(c.Addr); p != "" {
		problems = append(problems, p)
	}
	if c.ResultLinkTTL < 0 || c.ResultLinkTTL > MaxResultLinkTTL {
		problems = append(problems, fmt.Sprintf("ResultLinkTTL %v is not in [0, %v]", c.ResultLinkTTL, MaxResultLinkTTL))
	}
	if c.RedriveTimeout < 0 || c.RedriveTimeout > MaxRedriveTimeout {
		problems = append(problems, fmt.Sprintf("RedriveTimeout %v is not in [0, %v]", c.RedriveTimeout, MaxRedriveTimeout))
	}
	if c.LiveCountLimit < 0 || c.LiveCountLimit > jobs.MaxListLimit {
		problems = append(problems, fmt.Sprintf("LiveCountLimit %d is not in [0, %d]", c.LiveCountLimit, jobs.MaxListLimit))
	}
	if c.SourceTimeout < 0 || c.SourceTimeout > time.Minute {
		problems = append(problems, fmt.Sprintf("SourceTimeout %v is not in [0, 1m0s]", c.SourceTimeout))
	}
	seen := map[string]bool{}
	for i, q := range c.Queues {
		switch {
		case !queueName.MatchString(q.Name):
			problems = append(problems, fmt.Sprintf("Queues[%d].Name %q is not [A-Za-z0-9_.-]{1,80}", i, q.Name))
		case seen[q.Name]:
			problems = append(problems, fmt.Sprintf("Queues[%d].Name %q is named twice", i, q.Name))
		}
		seen[q.Name] = true
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
}

// addrProblem says why addr cannot be a listener's address, "" if it can.
func addrProblem(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("Addr %q is not host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("Addr %q: port %q is not 1 to 65535 (give the listener's address)", addr, port)
	}
	return ""
}

// allowedHosts is the set of Host headers a console listening on addr
// (valid: addrProblem) answers: addr itself and the loopback names with
// its port.
func allowedHosts(addr string) map[string]bool {
	host, port, _ := net.SplitHostPort(addr)
	hosts := map[string]bool{
		"127.0.0.1:" + port: true,
		"localhost:" + port: true,
		"[::1]:" + port:     true,
	}
	if host != "" {
		hosts[strings.ToLower(net.JoinHostPort(host, port))] = true
	}
	return hosts
}

func (c Config) withDefaults() Config {
	if c.ResultLinkTTL == 0 {
		c.ResultLinkTTL = DefaultResultLinkTTL
	}
	if c.RedriveTimeout == 0 {
		c.RedriveTimeout = DefaultRedriveTimeout
	}
	if c.SourceTimeout == 0 {
		c.SourceTimeout = DefaultSourceTimeout
	}
	if c.LiveCountLimit == 0 {
		c.LiveCountLimit = DefaultLiveCountLimit
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
