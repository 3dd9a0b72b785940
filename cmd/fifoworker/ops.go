package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The operator's commands (jobs, quarantine, sweep) work on a local stack
// and a real account alike: the SDK's standard configuration (AWS_PROFILE,
// AWS_REGION, AWS_ENDPOINT_URL for a local stack) says where, and the
// resources are named by flags or by the FIFOWORKER_* variables that
// `fifoworker local deploy` prints from template.yaml's outputs (set them
// from the stack's outputs for a real deployment).

// opsEnv is where the operator's commands find their resources (see
// target).
type opsEnv struct {
	getenv func(string) string
	stdin  io.Reader
	now    func() time.Time
	open   opener
	// stacks reads a local stack's env file: its variables and its path
	// (readStack). Nil: there are no local stacks.
	stacks func(name string) (vars map[string]string, path string, err error)
	// connect returns the opener of the resources with a stack's variables
	// (nil: the process environment), whose clients log through log
	// (connectAWS). Nil: open stays as it is.
	connect func(vars map[string]string, log *slog.Logger) opener
	// origin says where getenv's names come from, when not from the
	// environment: "the env file of stack serve (...)".
	origin string
}

func defaultOpsEnv() opsEnv {
	return opsEnv{getenv: os.Getenv, stdin: os.Stdin, now: time.Now, stacks: readStack, connect: connectAWS}
}

// resource returns the flag's value, or the output variable's.
func (e opsEnv) resource(flagValue, output, flagName string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if v := e.getenv(outputVar(output)); v != "" {
		return v, nil
	}
	if e.origin != "" {
		return "", fmt.Errorf("no %s: pass --%s; %s sets no %s", outputWords(output), flagName, e.origin, outputVar(output))
	}
	return "", fmt.Errorf("no %s: pass --%s or set %s (fifoworker local serve, or eval \"$(fifoworker local deploy)\", gives it for a local stack; --stack reads a local stack's)",
		outputWords(output), flagName, outputVar(output))
}

// outputWords names an output for a person: CommandsQueueUrl -> commands
// queue URL.
func outputWords(output string) string {
	words := strings.Split(strings.ToLower(strings.TrimPrefix(outputVar(output), "FIFOWORKER_")), "_")
	for i, w := range words {
		switch w {
		case "url", "arn", "dlq":
			words[i] = strings.ToUpper(w)
		}
	}
	return strings.Join(words, " ")
}

// opener opens what the operator's commands work on, after checking that
// it exists: awsOpener the real resources, the unit tests fakes.
type opener interface {
	jobsStore(ctx context.Context, table, hint string) (jobsStore, error)
	quarantineOperator(ctx context.Context, t quarantineTarget) (*quarantine.Operator, error)
	sweeper(ctx context.Context, s sweepTarget, log *slog.Logger) (sweepFunc, error)
}

// jobsStore is what the jobs commands call; *jobs.DynamoStore and
// *jobs.MemoryStore have it.
type jobsStore interface {
	Get(ctx context.Context, id string) (jobs.Job, error)
	Cancel(ctx context.Context, req jobs.CancelRequest) (jobs.Job, error)
	jobs.ListStore
}

var (
	_ jobsStore = (*jobs.DynamoStore)(nil)
	_ jobsStore = (*jobs.MemoryStore)(nil)
)

// quarantineTarget is the quarantine a command works on. The hints say
// where a name came from, for the error that says it is wrong.
type quarantineTarget struct {
	QueueURL, Queue, QueueHint string
	Table, TableHint           string
	Bucket, BucketHint         string // "" when none is configured
	NeedBucket                 bool   // check the bucket (discard archives there)
}

// awsOpener opens the resources with the SDK's standard configuration.
type awsOpener struct {
	load func(context.Context) (aws.Config, error)
}

func (o awsOpener) jobsStore(ctx context.Context, table, hint string) (jobsStore, error) {
	cfg, err := o.load(ctx)
	if err != nil {
		return nil, err
	}
	db := lambdawire.DynamoDB(cfg) // as the functions': no CRC32 check against DynamoDB Local
	if err := checkTable(ctx, db, table, hint); err != nil {
		return nil, err
	}
	return jobs.NewDynamoStore(db, table), nil
}

func (o awsOpener) quarantineOperator(ctx context.Context, t quarantineTarget) (*quarantine.Operator, error) {
	cfg, err := o.load(ctx)
	if err != nil {
		return nil, err
	}
	queues := sqs.NewFromConfig(cfg)
	if err := checkQueue(ctx, queues, t.QueueURL, t.QueueHint); err != nil {
		return nil, err
	}
	db := lambdawire.DynamoDB(cfg)
	if err := checkTable(ctx, db, t.Table, t.TableHint); err != nil {
		return nil, err
	}
	op := &quarantine.Operator{Store: quarantine.NewDynamoStore(db, t.Table), Queue: t.Queue, QueueURL: t.QueueURL, Sender: queues}
	if t.Bucket != "" {
		s3c := lambdawire.S3(cfg)
		if t.NeedBucket {
			if err := checkBucket(ctx, s3c, t.Bucket, t.BucketHint); err != nil {
				return nil, err
			}
		}
		op.Bodies = quarantine.NewS3Bodies(s3c, t.Bucket)
	}
	return op, nil
}

// errMissing marks a table, queue or bucket that does not exist.
var errMissing = errors.New("it does not exist")

type tableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// checkTable says clearly when the table is not there, rather than
// letting the first read fail with the SDK's words. hint says where the
// name came from.
func checkTable(ctx context.Context, db tableDescriber, table, hint string) error {
	_, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *dbtypes.ResourceNotFoundException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return fmt.Errorf("table %s: %w (check %s, and the region and endpoint the AWS configuration gives)", table, errMissing, hint)
	}
	return fmt.Errorf("table %s: %w", table, err)
}

type queueAttributes interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// checkQueue says clearly when the queue is not there.
func checkQueue(ctx context.Context, q queueAttributes, url, hint string) error {
	_, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameFifoQueue},
	})
	var nf *sqstypes.QueueDoesNotExist
	var api smithy.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf), errors.As(err, &api) && (strings.Contains(api.ErrorCode(), "NonExistentQueue") || api.ErrorCode() == "QueueDoesNotExist"):
		return fmt.Errorf("queue %s: %w (check %s)", url, errMissing, hint)
	}
	return fmt.Errorf("queue %s: %w", url, err)
}

type bucketHeader interface {
	HeadBucket(ctx context.Context, in *s3.HeadBucketInput, optFns ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
}

// checkBucket says clearly when the bucket is not there.
func checkBucket(ctx context.Context, b bucketHeader, bucket, hint string) error {
	_, err := b.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	var nf *s3types.NotFound
	var nb *s3types.NoSuchBucket
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf), errors.As(err, &nb):
		return fmt.Errorf("bucket %s: %w (check %s)", bucket, errMissing, hint)
	}
	return fmt.Errorf("bucket %s: %w", bucket, err)
}

// hint says where a resource's name came from.
func (e opsEnv) hint(flagValue, flagName, output string) string {
	switch {
	case flagValue != "":
		return "--" + flagName
	case e.origin != "":
		return outputVar(output) + " in " + e.origin
	}
	return outputVar(output)
}

// parseArgs parses fs's flags wherever they stand among args, so that
// `show g1 --json` means `show --json g1`, and returns the other
// arguments in order. Everything after "--" is an argument.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if len(left) == 0 {
			return rest, nil
		}
		if used := len(args) - len(left); used > 0 && args[used-1] == "--" {
			return append(rest, left...), nil
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

const quarantineUsage = `usage: fifoworker quarantine <list|show|redrive|discard> [group] [flags]

  list                    the groups held on the queue
  show <group>            a group's hold and its parked messages
  redrive <group>         send a group's parked messages back in order and wait until it is released
  discard <group>         drop a group's parked messages (or one, --seq), archived first; asks to confirm

flags:
  --stack NAME              a local stack's env file gives the endpoints and resources (fifoworker help)
  --queue commands|events   which queue's quarantine (default commands)
  --queue-url URL           the queue (default: FIFOWORKER_COMMANDS_QUEUE_URL or FIFOWORKER_EVENTS_QUEUE_URL)
  --table NAME              the quarantine table (default: FIFOWORKER_QUARANTINE_TABLE_NAME)
  --bucket NAME             where large bodies and archives are kept (default: FIFOWORKER_CANDIDATES_BUCKET_NAME)
  --json                    one JSON document on stdout, for scripts
  --all                     show: every message, processed and discarded ones too
  --no-wait                 redrive: return once the parked messages are sent
  --timeout D               redrive: how long to wait for the release (default 5m)
  --seq N                   discard: only the parked message with this sequence number
  --yes                     discard: do not ask

A group id that begins with "-" goes after "--". Exit status: 0 done, 1 failed
(a missing table or queue, a group that is not held, a redrive that did not
release its group), 2 a usage error.
`

func quarantineCmd(ctx context.Context, args []string, env opsEnv, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 0 {
			fmt.Fprint(stderr, quarantineUsage)
			return 2
		}
		fmt.Fprint(stdout, quarantineUsage)
		return 0
	}
	verb := args[0]
	switch verb {
	case "list", "show", "redrive", "discard":
	default:
		fmt.Fprintf(stderr, "fifoworker quarantine: unknown command %q\n\n%s", verb, quarantineUsage)
		return 2
	}
	fs := flag.NewFlagSet("quarantine "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	queueKind := fs.String("queue", "commands", "commands or events")
	queueURL := fs.String("queue-url", "", "the queue's URL")
	table := fs.String("table", "", "the quarantine table")
	bucket := fs.String("bucket", "", "the bucket of large bodies and archives")
	asJSON := fs.Bool("json", false, "JSON output")
	all := fs.Bool("all", false, "show every message")
	noWait := fs.Bool("no-wait", false, "do not wait for the release")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait")
	seq := fs.String("seq", "", "one parked message")
	yes := fs.Bool("yes", false, "do not ask")
	stack := stackFlag(fs)
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return 2
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fifoworker quarantine %s: %s\n", verb, fmt.Sprintf(format, a...))
		return 2
	}
	var group, queue string
	fail := func(err error) int {
		if errors.Is(err, quarantine.ErrNoHold) {
			err = fmt.Errorf("group %q is not held on %s (quarantine list shows the groups that are)", group, queue)
		}
		fmt.Fprintln(stderr, "fifoworker quarantine "+verb+":", err)
		return 1
	}
	var output string
	switch *queueKind {
	case "commands":
		output = "CommandsQueueUrl"
	case "events":
		output = "EventsQueueUrl"
	default:
		return usageErr("--queue %q: commands or events", *queueKind)
	}
	switch {
	case verb == "list" && len(pos) > 0:
		return usageErr("list takes no group (got %q)", pos)
	case verb != "list" && len(pos) != 1:
		return usageErr("name exactly one group (got %q)", pos)
	case verb != "list":
		group = pos[0]
	}
	if *seq != "" && verb != "discard" {
		return usageErr("--seq is discard's")
	}
	env, code := env.targetOf("quarantine "+verb, *stack, cliLogger(stderr, false), stderr)
	if code != 0 {
		return code
	}
	t := quarantineTarget{QueueHint: env.hint(*queueURL, "queue-url", output), NeedBucket: verb == "discard"}
	if t.QueueURL, err = env.resource(*queueURL, output, "queue-url"); err != nil {
		return fail(err)
	}
	if t.Queue, err = quarantine.QueueName(t.QueueURL); err != nil {
		return fail(err)
	}
	queue = t.Queue
	if t.Table, err = env.resource(*table, "QuarantineTableName", "table"); err != nil {
		return fail(err)
	}
	t.TableHint = env.hint(*table, "table", "QuarantineTableName")
	t.Bucket, _ = env.resource(*bucket, "CandidatesBucketName", "bucket")
	t.BucketHint = env.hint(*bucket, "bucket", "CandidatesBucketName")
	if verb == "discard" && t.Bucket == "" {
		return fail(errors.New("discard archives what it drops: pass --bucket or set FIFOWORKER_CANDIDATES_BUCKET_NAME"))
	}
	op, err := env.open.quarantineOperator(ctx, t)
	if err != nil {
		return fail(err)
	}
	switch verb {
	case "list":
		holds, err := op.List(ctx)
		if err != nil {
			return fail(err)
		}
		return printHolds(stdout, t.Queue, holds, *asJSON)
	case "show":
		status := quarantine.StatusParked
		if *all {
			status = ""
		}
		h, items, err := op.Show(ctx, group, status, 0)
		if err != nil {
			return fail(err)
		}
		return printShow(stdout, h, items, *asJSON)
	case "redrive":
		if !*asJSON {
			op.Progress = func(p quarantine.RedriveProgress) {
				fmt.Fprintf(stderr, "sent %s (epoch %d, %d sent)\n", p.Sequence, p.Epoch, p.Sent)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		rep, err := op.Redrive(wctx, group, !*noWait)
		timedOut := errors.Is(err, context.DeadlineExceeded)
		if err != nil && !timedOut {
			return fail(err)
		}
		// Why the group is not released, if it is not.
		var note string
		switch {
		case rep.State == quarantine.StateReleased:
		case rep.State == quarantine.StateHeld:
			note = "held again: " + oneLine(rep.Cause, 200)
		case timedOut:
			note = fmt.Sprintf("still draining after %v: run redrive again to resume", *timeout)
			rep.Cause = note
		default:
			// Draining: what was parked is sent, unless another redrive
			// took over (the hold's epoch is no longer this one's).
			now, err := op.Store.Hold(ctx, op.Queue, group)
			if err != nil {
				return fail(err)
			}
			if now.Epoch != rep.Epoch {
				note = fmt.Sprintf("another redrive (epoch %d) took over", now.Epoch)
				rep.Cause = note
			} else if !*noWait {
				note = "still draining"
			}
		}
		code := 0
		if note != "" {
			code = 1
		}
		if *asJSON {
			if printJSON(stdout, map[string]any{"group": rep.Group, "epoch": rep.Epoch, "sent": rep.Sent, "state": rep.State, "parked": rep.Parked, "cause": rep.Cause}) != 0 {
				return 1
			}
			return code
		}
		fmt.Fprintf(stdout, "group %s: %d sent under epoch %d; now %s, %d parked", rep.Group, rep.Sent, rep.Epoch, rep.State, rep.Parked)
		if note != "" {
			fmt.Fprintf(stdout, " (%s)", note)
		}
		fmt.Fprintln(stdout)
		return code
	default: // discard
		if !*yes {
			what := "every parked message of group " + group
			if *seq != "" {
				what = "parked message " + *seq + " of group " + group
			}
			fmt.Fprintf(stderr, "discard %s on %s? They are archived first. Type the group id to confirm: ", what, t.Queue)
			line, _ := bufio.NewReader(env.stdin).ReadString('\n')
			if strings.TrimSpace(line) != group {
				return fail(errors.New("not confirmed: nothing discarded (--yes skips the question)"))
			}
		}
		keys, h, err := op.Discard(ctx, group, *seq)
		if err != nil {
			return fail(err)
		}
		if *asJSON {
			return printJSON(stdout, map[string]any{"group": group, "discarded": len(keys), "archives": keys, "state": h.State, "parked": h.Parked})
		}
		fmt.Fprintf(stdout, "group %s: %d discarded, archived under s3://%s/%s; now %s, %d parked\n",
			group, len(keys), t.Bucket, strings.TrimSuffix(quarantine.ArchiveKey(t.Queue, group, ""), ".json"), h.State, h.Parked)
		return 0
	}
}

func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}

type holdJSON struct {
	Queue     string    `json:"queue"`
	Group     string    `json:"group"`
	State     string    `json:"state"`
	Epoch     int64     `json:"epoch"`
	Parked    int64     `json:"parked"`
	Cause     string    `json:"cause"`
	From      string    `json:"first_sequence,omitempty"`
	Through   string    `json:"last_sequence,omitempty"`
	Next      string    `json:"next_sequence,omitempty"` // the oldest still parked: the only one whose copy may run
	HeldAt    time.Time `json:"held_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func toHoldJSON(h quarantine.HoldRecord) holdJSON {
	j := holdJSON{Queue: h.Queue, Group: h.Group, State: string(h.State), Epoch: h.Epoch, Parked: h.Parked, Cause: h.Cause, HeldAt: h.HeldAt, UpdatedAt: h.UpdatedAt}
	if h.From != "" {
		j.From, j.Through = quarantine.SeqNumber(h.From), quarantine.SeqNumber(h.Through)
	}
	j.Next = quarantine.SeqNumber(h.Next)
	return j
}

func printHolds(w io.Writer, queue string, holds []quarantine.HoldRecord, asJSON bool) int {
	if asJSON {
		out := make([]holdJSON, 0, len(holds))
		for _, h := range holds {
			out = append(out, toHoldJSON(h))
		}
		return printJSON(w, map[string]any{"queue": queue, "holds": out})
	}
	if len(holds) == 0 {
		fmt.Fprintf(w, "no group of %s is held\n", queue)
		return 0
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tEPOCH\tPARKED\tHELD SINCE\tCAUSE")
	for _, h := range holds {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", h.Group, h.State, h.Epoch, h.Parked, h.HeldAt.UTC().Format(time.RFC3339), oneLine(h.Cause, 80))
	}
	_ = tw.Flush()
	return 0
}

type parkedJSON struct {
	Sequence        string    `json:"sequence_number"`
	MessageID       string    `json:"message_id"`
	DeduplicationID string    `json:"deduplication_id,omitempty"`
	Status          string    `json:"status"`
	BodySize        int64     `json:"body_size"`
	BodyKey         string    `json:"body_key,omitempty"`
	Body            string    `json:"body,omitempty"`
	Receives        int       `json:"receive_count"`
	Cause           string    `json:"cause"`
	ParkedAt        time.Time `json:"parked_at"`
}

func printShow(w io.Writer, h quarantine.HoldRecord, items []quarantine.Parked, asJSON bool) int {
	if asJSON {
		out := make([]parkedJSON, 0, len(items))
		for _, p := range items {
			out = append(out, parkedJSON{Sequence: quarantine.SeqNumber(p.Sequence), MessageID: p.MessageID, DeduplicationID: p.DeduplicationID,
				Status: string(p.Status), BodySize: p.BodySize, BodyKey: p.BodyKey, Body: p.Body, Receives: p.ReceiveCount, Cause: p.Cause, ParkedAt: p.ParkedAt})
		}
		return printJSON(w, map[string]any{"hold": toHoldJSON(h), "messages": out})
	}
	fmt.Fprintf(w, "group %s on %s: %s, epoch %d, %d parked\ncause: %s\n\n", h.Group, h.Queue, h.State, h.Epoch, h.Parked, oneLine(h.Cause, 200))
	if len(items) == 0 {
		fmt.Fprintln(w, "no message to show")
		return 0
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQUENCE\tSTATUS\tRECEIVES\tSIZE\tBODY")
	for _, p := range items {
		body := oneLine(p.Body, 60)
		if p.BodyKey != "" {
			body = "(in " + p.BodyKey + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", quarantine.SeqNumber(p.Sequence), p.Status, p.ReceiveCount, p.BodySize, body)
	}
	_ = tw.Flush()
	return 0
}

func oneLine(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}
