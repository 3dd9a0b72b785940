package console

import (
	"context"
	"errors"
	"time"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The console reads and acts through the operator's own logic, as the CLI
// does: these are the parts of pkg/jobs, pkg/candidate, pkg/quarantine and
// the sweeper it calls, so a handler test passes the memory stores and
// `fifoworker console` the real ones. It has no second implementation of
// any of them.

// Jobs is what the jobs pages read: one job, and the listings of
// jobs.List. *jobs.DynamoStore, *jobs.PostgresStore and *jobs.MemoryStore
// have it.
type Jobs interface {
	Get(ctx context.Context, id string) (jobs.Job, error)
	jobs.ListStore
}

// Candidates lists one job's candidate objects, one per attempt, in key
// order (generation, then attempt id). *candidate.Store has it.
type Candidates interface {
	List(ctx context.Context, jobID string) ([]candidate.Entry, error)
}

// Results signs a link that downloads an accepted result, and only its
// bytes, for ttl: the jobs API's presigner (intake.S3Presigner).
type Results interface {
	PresignGet(ctx context.Context, r jobs.Result, ttl time.Duration) (string, error)
}

// Quarantine is one queue's quarantine: *quarantine.Operator.
type Quarantine interface {
	List(ctx context.Context) ([]quarantine.HoldRecord, error)
	Show(ctx context.Context, group string, status quarantine.Status, limit int) (quarantine.HoldRecord, []quarantine.Parked, error)
	Redrive(ctx context.Context, group string, wait bool) (quarantine.RedriveReport, error)
	Discard(ctx context.Context, group, seq string) ([]string, quarantine.HoldRecord, error)
}

var _ Quarantine = (*quarantine.Operator)(nil)

// Queue is one of the pipeline's queues (or, on Kafka, topics) as the
// overview and the quarantine pages show it.
type Queue struct {
	// Name is how the pages and their URLs name it: "commands", "events".
	Name string
	// Quarantine is the queue's quarantine; nil when it has none.
	Quarantine Quarantine
	// DeadLetters reads the depth of its dead-letter queue; nil when it
	// has none (Kafka's topics).
	DeadLetters Depth
	// NoRedrive says why a redrive cannot work on this queue (a Kafka
	// topic without brokers to produce the copies to). Default (""): it
	// can. When set, no page offers one and one is refused (403) with it.
	NoRedrive string
	// NoDiscard says why a discard cannot work on this queue (no bucket
	// for its archive). Default (""): it can. When set, no page offers
	// one and one is refused (403) with it.
	NoDiscard string
}

// Depth reads how many messages a queue holds without receiving any (SQS's
// ApproximateNumberOfMessages): a receive would raise the messages'
// receive counts and lock their groups.
type Depth interface {
	Depth(ctx context.Context) (int64, error)
}

// OldestCommand reads the age of the commands queue's oldest message from
// CloudWatch (ApproximateAgeOfOldestMessage). A local stack has no
// CloudWatch: Config.OldestCommand is then nil and the overview says the
// age is unavailable, never peeking at the queue.
type OldestCommand interface {
	OldestCommandAge(ctx context.Context) (time.Duration, error)
}

// Sweeps reads the report the sweeper keeps of its last run.
type Sweeps interface {
	LastRun(ctx context.Context) (sweeper.LastRun, error)
}

// ErrUnavailable is what a source answers when what it reads does not exist
// where the console runs (no CloudWatch on a local stack).
var ErrUnavailable = errors.New("console: unavailable here")

// ErrNoDatapoint is what an OldestCommand answers when CloudWatch has no
// datapoint of the metric in its window: the queue held no message, or
// its name is not a queue's. Its message says which window.
var ErrNoDatapoint = errors.New("no datapoint")
