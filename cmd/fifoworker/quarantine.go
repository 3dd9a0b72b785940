package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

const quarantineExit = `A group id that begins with "-" goes after "--". Exit status: 0 done, 1 failed
(a missing table or queue, a group that is not held, a redrive that did not
release its group), 2 a usage error.

On a Kafka deployment (template-kafka.yaml), --transport kafka, or
FIFOWORKER_TRANSPORT=kafka: the quarantine is a topic's (the commands topic
unless --queue events; --topic, or FIFOWORKER_COMMANDS_TOPIC and
FIFOWORKER_EVENTS_TOPIC), a group is a key of it (a job id), and --seq is an
offset in the partition the key is held on. A redrive produces its copies to
that partition, so it needs the brokers: --brokers, or KAFKA_BOOTSTRAP_SERVERS,
and --sasl-mechanism AWS_MSK_IAM (or KAFKA_SASL_MECHANISM) for MSK IAM, signed
with the AWS configuration's credentials.`

func (c *cli) quarantineCmd() *cobra.Command {
	return group("quarantine", "the groups held on a queue: list, show, redrive, discard",
		"The groups held on a queue (the commands queue unless --queue events) and their parked messages.\n\n"+quarantineExit,
		c.quarantineListCmd(), c.quarantineShowCmd(), c.quarantineRedriveCmd(), c.quarantineDiscardCmd())
}

// queueFlags are the flags of every quarantine verb: which quarantine.
type queueFlags struct {
	Stack    string // a local stack whose env file names the resources
	Queue    string // commands or events
	QueueURL string
	Table    string // the quarantine table
	Bucket   string // where large bodies and archives are kept
	JSON     bool

	// On Kafka (see quarantineExit).
	Transport string // sqs or kafka; "": FIFOWORKER_TRANSPORT, else sqs
	Topic     string
	Brokers   string // host:port,..., for a redrive's copies
	SASL      string // the brokers' SASL mechanism: AWS_MSK_IAM, or "" for none
}

func bindQueue(cmd *cobra.Command, f *queueFlags) {
	fs := cmd.Flags()
	bindStackFlag(fs, &f.Stack)
	fs.StringVar(&f.Queue, "queue", "commands", "which queue's quarantine: `commands|events`")
	fs.StringVar(&f.QueueURL, "queue-url", "", "the queue's `URL` (default: FIFOWORKER_COMMANDS_QUEUE_URL or FIFOWORKER_EVENTS_QUEUE_URL)")
	fs.StringVar(&f.Table, "table", "", "the quarantine table `NAME` (default: FIFOWORKER_QUARANTINE_TABLE_NAME)")
	fs.StringVar(&f.Bucket, "bucket", "", "the bucket `NAME` where large bodies and archives are kept (default: FIFOWORKER_CANDIDATES_BUCKET_NAME)")
	fs.BoolVar(&f.JSON, "json", false, "one JSON document on stdout, for scripts")
	fs.StringVar(&f.Transport, "transport", "", "the deployment's transport, `sqs|kafka` (default: FIFOWORKER_TRANSPORT, else sqs)")
	fs.StringVar(&f.Topic, "topic", "", "on Kafka, the topic's `NAME` (default: FIFOWORKER_COMMANDS_TOPIC or FIFOWORKER_EVENTS_TOPIC)")
	fs.StringVar(&f.Brokers, "brokers", "", "on Kafka, the brokers a redrive produces to, `host:port,...` (default: KAFKA_BOOTSTRAP_SERVERS)")
	fs.StringVar(&f.SASL, "sasl-mechanism", "", "on Kafka, the brokers' SASL `mechanism`: AWS_MSK_IAM, or none (default: KAFKA_SASL_MECHANISM)")
	_ = cmd.RegisterFlagCompletionFunc("transport", cobra.FixedCompletions([]cobra.Completion{"sqs", "kafka"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("queue", cobra.FixedCompletions([]cobra.Completion{"commands", "events"}, cobra.ShellCompDirectiveNoFileComp))
}

// output is the template's output that names the queue, or the topic on
// Kafka.
func (f *queueFlags) output(kafka bool) string {
	switch {
	case kafka && f.Queue == "events":
		return "EventsTopic"
	case kafka:
		return "CommandsTopic"
	case f.Queue == "events":
		return "EventsQueueUrl"
	}
	return "CommandsQueueUrl"
}

func (f *queueFlags) Validate() error {
	if f.Queue != "commands" && f.Queue != "events" {
		return fmt.Errorf("--queue %q: commands or events", f.Queue)
	}
	if f.Transport != "" && f.Transport != "sqs" && f.Transport != "kafka" {
		return fmt.Errorf("--transport %q: sqs or kafka", f.Transport)
	}
	return nil
}

// kafka reports whether the quarantine is a Kafka topic's: --transport,
// else FIFOWORKER_TRANSPORT.
func (f *queueFlags) kafka(env opsEnv) (bool, error) {
	t := f.Transport
	if t == "" {
		t = env.getenv("FIFOWORKER_TRANSPORT")
	}
	switch t {
	case "", "sqs":
		return false, nil
	case "kafka":
		return true, nil
	}
	return false, usageError(fmt.Errorf("FIFOWORKER_TRANSPORT %q: sqs or kafka", t))
}

// operator opens the quarantine f names (with its bucket checked when
// needBucket; progress, when set, told of each copy a redrive sends), and
// says where it is.
func (f *queueFlags) operator(ctx context.Context, c *cli, needBucket bool, progress func(quarantine.RedriveProgress)) (*quarantine.Operator, quarantineTarget, error) {
	env, err := c.env.targetOf(f.Stack, cliLogger(c.stderr, false), c.stderr)
	if err != nil {
		return nil, quarantineTarget{}, err
	}
	return f.operatorIn(ctx, env, needBucket, progress)
}

// operatorIn is operator in env, the place targetOf chose (the console
// opens each queue's quarantine in the one it chose once).
func (f *queueFlags) operatorIn(ctx context.Context, env opsEnv, needBucket bool, progress func(quarantine.RedriveProgress)) (*quarantine.Operator, quarantineTarget, error) {
	kafka, err := f.kafka(env)
	if err != nil {
		return nil, quarantineTarget{}, err
	}
	output := f.output(kafka)
	t := quarantineTarget{QueueHint: env.hint(f.QueueURL, "queue-url", output), NeedBucket: needBucket, Progress: progress}
	if kafka {
		if err := f.kafkaTarget(env, &t, output); err != nil {
			return nil, t, err
		}
	} else {
		if t.QueueURL, err = env.resource(f.QueueURL, output, "queue-url"); err != nil {
			return nil, t, err
		}
		if t.Queue, err = quarantine.QueueName(t.QueueURL); err != nil {
			return nil, t, err
		}
	}
	if t.Table, err = env.resource(f.Table, "QuarantineTableName", "table"); err != nil {
		return nil, t, err
	}
	t.TableHint = env.hint(f.Table, "table", "QuarantineTableName")
	t.Bucket, _ = env.resource(f.Bucket, "CandidatesBucketName", "bucket")
	t.BucketHint = env.hint(f.Bucket, "bucket", "CandidatesBucketName")
	if needBucket && t.Bucket == "" {
		return nil, t, errors.New("discard archives what it drops: pass --bucket or set FIFOWORKER_CANDIDATES_BUCKET_NAME")
	}
	op, err := env.open.quarantineOperator(ctx, t)
	return op, t, err
}

// kafkaTarget fills in t, of the Kafka topic output names: the topic, and
// the brokers and their SASL mechanism when given (a redrive needs them).
func (f *queueFlags) kafkaTarget(env opsEnv, t *quarantineTarget, output string) error {
	var err error
	t.Kafka, t.QueueHint = true, env.hint(f.Topic, "topic", output)
	if t.Queue, err = env.resource(f.Topic, output, "topic"); err != nil {
		return err
	}
	brokers := f.Brokers
	if brokers == "" {
		brokers = env.getenv("KAFKA_BOOTSTRAP_SERVERS")
	}
	for b := range strings.SplitSeq(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			t.Brokers = append(t.Brokers, b)
		}
	}
	t.SASL = f.SASL
	if t.SASL == "" {
		t.SASL = env.getenv("KAFKA_SASL_MECHANISM")
	}
	return nil
}

// group is the store's group of the id an operator gives: on Kafka, the
// key's (quarantine.KafkaGroup: the key itself for a job id).
func (t quarantineTarget) group(id string) string {
	if t.Kafka {
		return quarantine.KafkaGroup(id)
	}
	return id
}

// notHeld says in the operator's words that group is not held on queue.
func notHeld(err error, group, queue string) error {
	if errors.Is(err, quarantine.ErrNoHold) {
		return fmt.Errorf("group %q is not held on %s (quarantine list shows the groups that are)", group, queue)
	}
	return err
}

// bindAllQueueVerbs binds the flags of show, redrive and discard that every
// quarantine verb took before each had its own (all but --seq, which was
// always discard's), for the flags a verb ignores (ignoreFlags).
func bindAllQueueVerbs(fs *pflag.FlagSet) {
	bindShow(fs, &quarantineShowOptions{})
	bindRedrive(fs, &quarantineRedriveOptions{})
	fs.BoolVar(new(bool), "yes", false, "")
}

// quarantineVerb makes the command of a quarantine verb; a verb on a group
// (group not nil) takes its id.
func (c *cli) quarantineVerb(use, short, long string, v verb, f *queueFlags, group *string, ignored ...string) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long + "\n\n" + quarantineExit,
		Args: args(0, "group"), ValidArgsFunction: cobra.NoFileCompletions, RunE: c.choose(v, nil),
	}
	if group != nil {
		cmd.Args = args(1, "group")
		cmd.RunE = c.choose(v, func(args []string) { *group = args[0] })
	}
	bindQueue(cmd, f)
	ignoreFlags(cmd, bindAllQueueVerbs, ignored...)
	return cmd
}

// quarantineListOptions are `fifoworker quarantine list`'s.
type quarantineListOptions struct{ queueFlags }

func (c *cli) quarantineListCmd() *cobra.Command {
	o := &quarantineListOptions{}
	return c.quarantineVerb("list", "the groups held on the queue", "The groups held on the queue.",
		o, &o.queueFlags, nil, "all", "no-wait", "timeout", "yes")
}

func (o *quarantineListOptions) Run(ctx context.Context, c *cli) error {
	op, t, err := o.operator(ctx, c, false, nil)
	if err != nil {
		return err
	}
	holds, err := op.List(ctx)
	if err != nil {
		return err
	}
	if t.Kafka {
		return printKafkaHolds(c.stdout, t.Queue, holds, o.JSON)
	}
	return printHolds(c.stdout, t.Queue, holds, o.JSON)
}

// quarantineShowOptions are `fifoworker quarantine show`'s.
type quarantineShowOptions struct {
	queueFlags
	Group string
	All   bool // every message, processed and discarded ones too
}

func bindShow(fs *pflag.FlagSet, o *quarantineShowOptions) {
	fs.BoolVar(&o.All, "all", false, "every message, processed and discarded ones too")
}

func (c *cli) quarantineShowCmd() *cobra.Command {
	o := &quarantineShowOptions{}
	cmd := c.quarantineVerb("show <group>", "a group's hold and its parked messages", "A group's hold and its parked messages, in order.",
		o, &o.queueFlags, &o.Group, "no-wait", "timeout", "yes")
	bindShow(cmd.Flags(), o)
	return cmd
}

func (o *quarantineShowOptions) Run(ctx context.Context, c *cli) error {
	op, t, err := o.operator(ctx, c, false, nil)
	if err != nil {
		return err
	}
	status := quarantine.StatusParked
	if o.All {
		status = ""
	}
	h, items, err := op.Show(ctx, t.group(o.Group), status, 0)
	if err != nil {
		return notHeld(err, o.Group, t.Queue)
	}
	if t.Kafka {
		return printKafkaShow(c.stdout, o.Group, h, items, o.JSON)
	}
	return printShow(c.stdout, h, items, o.JSON)
}

// quarantineRedriveOptions are `fifoworker quarantine redrive`'s.
type quarantineRedriveOptions struct {
	queueFlags
	Group   string
	NoWait  bool          // return once the parked messages are sent
	Timeout time.Duration // how long to wait for the release
}

func bindRedrive(fs *pflag.FlagSet, o *quarantineRedriveOptions) {
	fs.BoolVar(&o.NoWait, "no-wait", false, "return once the parked messages are sent")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "wait at most `D` for the release")
}

func (c *cli) quarantineRedriveCmd() *cobra.Command {
	o := &quarantineRedriveOptions{}
	cmd := c.quarantineVerb("redrive <group>", "send a group's parked messages back in order and wait until it is released",
		`Send a group's parked messages back to the queue in order, under a new epoch, and wait
until the group is released (or held again, or --timeout passes). Run again, it resumes.`,
		o, &o.queueFlags, &o.Group, "all", "yes")
	bindRedrive(cmd.Flags(), o)
	return cmd
}

func (o *quarantineRedriveOptions) Run(ctx context.Context, c *cli) error {
	var progress func(quarantine.RedriveProgress)
	if !o.JSON {
		progress = func(p quarantine.RedriveProgress) {
			fmt.Fprintf(c.stderr, "sent %s (epoch %d, %d sent)\n", p.Sequence, p.Epoch, p.Sent)
		}
	}
	op, t, err := o.operator(ctx, c, false, progress)
	if err != nil {
		return err
	}
	if t.Kafka && len(t.Brokers) == 0 {
		return usageError(errors.New("a redrive on Kafka produces its copies: pass --brokers or set KAFKA_BOOTSTRAP_SERVERS"))
	}
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	rep, err := op.Redrive(wctx, t.group(o.Group), !o.NoWait)
	timedOut := errors.Is(err, context.DeadlineExceeded)
	if err != nil && !timedOut {
		return notHeld(err, o.Group, t.Queue)
	}
	note := o.notReleased(&rep, timedOut)
	if o.JSON {
		err = printJSON(c.stdout, map[string]any{"group": o.Group, "epoch": rep.Epoch, "sent": rep.Sent, "state": rep.State, "parked": rep.Parked, "cause": rep.Cause})
	} else {
		fmt.Fprintf(c.stdout, "group %s: %d sent under epoch %d; now %s, %d parked", o.Group, rep.Sent, rep.Epoch, rep.State, rep.Parked)
		if note != "" {
			fmt.Fprintf(c.stdout, " (%s)", note)
		}
		fmt.Fprintln(c.stdout)
	}
	if err == nil && note != "" {
		return exitStatus(1)
	}
	return err
}

// notReleased says why a redrive's group is not released, "" if it is,
// or if it was not to wait and its copies are sent. It sets the report's
// cause where the hold's would mislead.
func (o *quarantineRedriveOptions) notReleased(rep *quarantine.RedriveReport, timedOut bool) string {
	switch {
	case rep.State == quarantine.StateReleased:
		return ""
	case rep.State == quarantine.StateHeld:
		return "held again: " + oneLine(rep.Cause, 200)
	case rep.TakenOverBy != 0: // its cause says so
		return rep.Cause
	case timedOut:
		rep.Cause = fmt.Sprintf("still draining after %v: run redrive again to resume", o.Timeout)
		return rep.Cause
	case !o.NoWait:
		return "still draining"
	}
	return ""
}

// quarantineDiscardOptions are `fifoworker quarantine discard`'s.
type quarantineDiscardOptions struct {
	queueFlags
	Group string
	Seq   string // only the parked message with this sequence number
	Yes   bool   // do not ask
}

func (c *cli) quarantineDiscardCmd() *cobra.Command {
	o := &quarantineDiscardOptions{}
	cmd := c.quarantineVerb("discard <group>", "drop a group's parked messages (or one, --seq), archived first; asks to confirm",
		`Drop a group's parked messages (or one, --seq), each archived first to
s3://BUCKET/quarantine-archive/. It asks you to type the group id unless --yes.`,
		o, &o.queueFlags, &o.Group, "all", "no-wait", "timeout")
	cmd.Flags().StringVar(&o.Seq, "seq", "", "only the parked message with sequence number `N`")
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "do not ask")
	return cmd
}

func (o *quarantineDiscardOptions) Run(ctx context.Context, c *cli) error {
	op, t, err := o.operator(ctx, c, true, nil)
	if err != nil {
		return err
	}
	if !o.Yes {
		what := "every parked message of group " + o.Group
		if o.Seq != "" {
			what = "parked message " + o.Seq + " of group " + o.Group
		}
		fmt.Fprintf(c.stderr, "discard %s on %s? They are archived first. Type the group id to confirm: ", what, t.Queue)
		line, _ := bufio.NewReader(c.env.stdin).ReadString('\n')
		if strings.TrimSpace(line) != o.Group {
			return errors.New("not confirmed: nothing discarded (--yes skips the question)")
		}
	}
	seq := o.Seq
	if t.Kafka && seq != "" {
		if seq, err = kafkaSeqNumber(ctx, op, t.group(o.Group), seq); err != nil {
			return notHeld(err, o.Group, t.Queue)
		}
	}
	keys, h, err := op.Discard(ctx, t.group(o.Group), seq)
	if err != nil {
		return notHeld(err, o.Group, t.Queue)
	}
	if o.JSON {
		return printJSON(c.stdout, map[string]any{"group": o.Group, "discarded": len(keys), "archives": keys, "state": h.State, "parked": h.Parked})
	}
	fmt.Fprintf(c.stdout, "group %s: %d discarded, archived under s3://%s/%s; now %s, %d parked\n",
		o.Group, len(keys), t.Bucket, strings.TrimSuffix(quarantine.ArchiveKey(t.Queue, t.group(o.Group), ""), ".json"), h.State, h.Parked)
	return nil
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

func printHolds(w io.Writer, queue string, holds []quarantine.HoldRecord, asJSON bool) error {
	if asJSON {
		out := make([]holdJSON, 0, len(holds))
		for _, h := range holds {
			out = append(out, toHoldJSON(h))
		}
		return printJSON(w, map[string]any{"queue": queue, "holds": out})
	}
	if len(holds) == 0 {
		fmt.Fprintf(w, "no group of %s is held\n", queue)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tEPOCH\tPARKED\tHELD SINCE\tCAUSE")
	for _, h := range holds {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", h.Group, h.State, h.Epoch, h.Parked, h.HeldAt.UTC().Format(time.RFC3339), oneLine(h.Cause, 80))
	}
	return tw.Flush()
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

func printShow(w io.Writer, h quarantine.HoldRecord, items []quarantine.Parked, asJSON bool) error {
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
		return nil
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
	return tw.Flush()
}
