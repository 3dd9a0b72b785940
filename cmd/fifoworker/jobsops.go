package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

const jobsExit = `Exit status: 0 done, 1 failed (a missing table or job, a job of another
tenant), 2 a usage error.`

// cancelExit is the rule of cancel's exit status.
const cancelExit = `cancel exits 0 only when it cancelled the job: a job that already ended,
completed, failed or cancelled alike, is left as it is and exits 1, saying
how it ended (with --json, stdout still has the job and "changed": false).`

func (c *cli) jobsCmd() *cobra.Command {
	return group("jobs", "get, list and cancel jobs", "Get, list and cancel the jobs of the jobs table.\n\n"+jobsExit+" "+cancelExit, c.jobsGetCmd(), c.jobsListCmd(), c.jobsCancelCmd())
}

// jobsFlags are the flags of every jobs verb.
type jobsFlags struct {
	Stack string // a local stack whose env file names the table
	Table string // the jobs table
	JSON  bool
}

func bindJobs(fs *pflag.FlagSet, f *jobsFlags) {
	bindStackFlag(fs, &f.Stack)
	fs.StringVar(&f.Table, "table", "", "the jobs table `NAME` (default: FIFOWORKER_JOBS_TABLE_NAME)")
	fs.BoolVar(&f.JSON, "json", false, "one JSON document on stdout, for scripts")
}

// store opens the jobs table f names, and returns it with its name.
func (f *jobsFlags) store(ctx context.Context, c *cli) (jobsStore, string, error) {
	env, err := c.env.targetOf(f.Stack, cliLogger(c.stderr, false), c.stderr)
	if err != nil {
		return nil, "", err
	}
	name, err := env.resource(f.Table, "JobsTableName", "table")
	if err != nil {
		return nil, "", err
	}
	st, err := env.open.jobsStore(ctx, name, env.hint(f.Table, "table", "JobsTableName"))
	return st, name, err
}

// notFound names the table in the error of a job that is not in it.
func notFound(err error, id, table string) error {
	if errors.Is(err, jobs.ErrNotFound) {
		return fmt.Errorf("job %s not found in table %s", id, table)
	}
	return err
}

// jobsVerb makes the command of a jobs verb on one job.
func (c *cli) jobsVerb(use, short, long string, v verb, id *string, f *jobsFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long + "\n\n" + jobsExit,
		Args: args(1, "job id"), ValidArgsFunction: cobra.NoFileCompletions,
		RunE: c.choose(v, func(args []string) { *id = args[0] }),
	}
	bindJobs(cmd.Flags(), f)
	return cmd
}

// jobsGetOptions are `fifoworker jobs get`'s.
type jobsGetOptions struct {
	jobsFlags
	ID       string
	Timeline bool // the job's history, one transition a line, instead of its fields
}

func (c *cli) jobsGetCmd() *cobra.Command {
	o := &jobsGetOptions{}
	cmd := c.jobsVerb("get <id>", "one job: status, generation, version, lease, result, failure, times",
		`One job: its status, generation, version, lease, result, failure and times.

--timeline prints its history instead, one transition a line, oldest first: when, the
version, status and generation it left, and what it was (created, claimed, lease ran
out → taken over, renewed, nudged, lease ran out → requeued, completed, failed,
cancelled). The job item keeps its last 20 transitions; one written before the history
existed has those since. --json always carries the history ("history").`, o, &o.ID, &o.jobsFlags)
	cmd.Flags().BoolVar(&o.Timeline, "timeline", false, "the job's history, one transition a line")
	return cmd
}

func (o *jobsGetOptions) Validate() error { return jobs.ValidateID(o.ID) }

func (o *jobsGetOptions) Run(ctx context.Context, c *cli) error {
	st, table, err := o.store(ctx, c)
	if err != nil {
		return err
	}
	j, err := st.Get(ctx, o.ID)
	if err != nil {
		return notFound(err, o.ID, table)
	}
	switch {
	case o.JSON:
		return printJSON(c.stdout, toJobJSON(&j))
	case o.Timeline:
		printTimeline(c.stdout, &j)
	default:
		printJob(c.stdout, &j, c.env.now())
	}
	return nil
}

// printTimeline shows a job's history for a person: one line a
// transition, what it was as jobs.Describe reads it.
func printTimeline(w io.Writer, j *jobs.Job) {
	if len(j.History) == 0 {
		fmt.Fprintf(w, "job %s has no history: its item was written before the job items kept one, and has not changed since (version %d, %s)\n",
			j.ID, j.Version, j.Status)
		return
	}
	fmt.Fprintf(w, "job %s, tenant %s: %s\n", j.ID, j.Tenant, keptHistory(j))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tVERSION\tSTATUS\tGEN\tTRANSITION")
	for _, s := range jobs.Describe(j.History) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", when(s.At), s.Version, s.Status, s.Generation, s)
	}
	_ = tw.Flush()
}

// keptHistory says which of a job's transitions its history holds.
func keptHistory(j *jobs.Job) string {
	n, first := len(j.History), j.History[0].Version
	switch {
	case first == 0:
		return fmt.Sprintf("all %d transitions", n)
	case n == jobs.MaxHistory:
		return fmt.Sprintf("the last %d of %d transitions (the item keeps %d)", n, j.Version+1, jobs.MaxHistory)
	}
	return fmt.Sprintf("the last %d of %d transitions (the item kept none before version %d)", n, j.Version+1, first)
}

// jobsListOptions are `fifoworker jobs list`'s.
type jobsListOptions struct {
	jobsFlags
	Tenant     string
	Status     string        // only the jobs of this status; "" for any
	Live       bool          // only the jobs that are not final
	Since      time.Duration // the final jobs that ended within it; 0: all the table keeps
	SinceGiven bool          // --since was given (it is about final jobs, which --live leaves out)
	Limit      int           // jobs a page
	Token      string        // go on after the page that printed it
	All        bool          // every job, page after page, as NDJSON
}

func (c *cli) jobsListCmd() *cobra.Command {
	o := &jobsListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "the jobs that are not final, then the final jobs that ended within --since",
		Long: `The jobs that are not final, least recently changed first, then the final jobs that
ended within --since, in the order they ended. It reads the live and finished indexes,
which hold keys only, then each job; filtered by --tenant, it looks at no more than 2,000
entries per index, and it says when there may be more than it printed.

A page that may not be the last ends with its token (text: a "next page" line; --json:
"next_token"): --starting-token goes on after its last job, with the same --tenant,
--status, --live and --since. --status lists one status: pending or running from the live
index only, completed, failed or cancelled from the finished index only (within --since). A job that did not change meanwhile is shown exactly once; one that
changed may show again as it is now (a job that ended, among the final ones); the indexes
lag a moment behind the table. --json --all streams every job instead, one JSON object a
line (NDJSON), page after page of --limit.

` + jobsExit,
		Args: args(0, "job id"),
		RunE: c.choose(o, nil),
	}
	fs := cmd.Flags()
	bindJobs(fs, &o.jobsFlags)
	fs.StringVar(&o.Tenant, "tenant", "", "only the jobs of tenant `T`")
	fs.StringVar(&o.Status, "status", "", "only the jobs of status `S`: pending, running, completed, failed or cancelled")
	fs.BoolVar(&o.Live, "live", false, "only the jobs that are not final")
	fs.DurationVar(&o.Since, "since", 24*time.Hour, "the final jobs that ended within `D` (0: all the table keeps)")
	fs.IntVar(&o.Limit, "limit", jobs.DefaultListLimit, fmt.Sprintf("at most `N` jobs a page, 1 to %d (with --all: default %d)", jobs.MaxListLimit, jobs.MaxListLimit))
	fs.StringVar(&o.Token, "starting-token", "", "go on after the last job of the page that printed token `T`")
	fs.BoolVar(&o.All, "all", false, "with --json: every job, page after page, as NDJSON (one a line)")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		o.SinceGiven = cmd.Flags().Changed("since")
		if (o.Live || (o.Status != "" && !jobs.Status(o.Status).Final())) && !o.SinceGiven {
			o.Since = 0 // --since's default is about final jobs
		}
		if o.All && !cmd.Flags().Changed("limit") {
			o.Limit = jobs.MaxListLimit
		}
	}
	return cmd
}

func (o *jobsListOptions) Validate() error {
	switch {
	case o.Limit < 1 || o.Limit > jobs.MaxListLimit:
		return fmt.Errorf("--limit %d: 1 to %d", o.Limit, jobs.MaxListLimit)
	case o.All && !o.JSON:
		return errors.New("--all streams NDJSON: give --json too")
	case o.Since < 0:
		return fmt.Errorf("--since %v is negative", o.Since)
	case o.Live && o.SinceGiven:
		return errors.New("--since is about final jobs, which --live leaves out")
	case o.Status == "":
		return nil
	case !slices.Contains(jobs.Statuses, jobs.Status(o.Status)):
		return fmt.Errorf("--status: %w", (&jobs.ListOptions{Status: jobs.Status(o.Status)}).Validate())
	case jobs.Status(o.Status).Final() && o.Live:
		return fmt.Errorf("--status %s is final, which --live leaves out", o.Status)
	case !jobs.Status(o.Status).Final() && o.SinceGiven:
		return fmt.Errorf("--since is about final jobs, which --status %s leaves out", o.Status)
	}
	return nil
}

func (o *jobsListOptions) Run(ctx context.Context, c *cli) error {
	st, table, err := o.store(ctx, c)
	if err != nil {
		return err
	}
	lo := jobs.ListOptions{Tenant: o.Tenant, Status: jobs.Status(o.Status), LiveOnly: o.Live, Since: o.Since, Limit: o.Limit, Token: o.Token}
	now := c.env.now()
	if o.All {
		err = streamJobs(ctx, c.stdout, st, lo, now)
	} else {
		var page jobs.ListPage
		if page, err = jobs.List(ctx, st, lo, now); err == nil {
			return printJobList(c.stdout, table, lo, page, o.JSON)
		}
	}
	if errors.Is(err, jobs.ErrBadToken) {
		return usageErrorf("--starting-token: %w", err)
	}
	return err
}

// jobsCancelOptions are `fifoworker jobs cancel`'s.
type jobsCancelOptions struct {
	jobsFlags
	ID     string
	Tenant string // the job's: a check against cancelling the wrong job
	Reason string // the cancellation's message
}

func (c *cli) jobsCancelCmd() *cobra.Command {
	o := &jobsCancelOptions{}
	cmd := c.jobsVerb("cancel <id> --tenant T", "end a pending or running job; a worker still running it can write nothing more",
		`End a pending or running job: its generation moves on, so a worker still running it
can write nothing more. It reads the job first and refuses another tenant's.

`+cancelExit, o, &o.ID, &o.jobsFlags)
	cmd.Flags().StringVar(&o.Tenant, "tenant", "", "the job's tenant `T` (required)")
	cmd.Flags().StringVar(&o.Reason, "reason", "", "`TEXT` recorded as the cancellation's message")
	return cmd
}

func (o *jobsCancelOptions) Validate() error {
	if err := jobs.ValidateID(o.ID); err != nil {
		return err
	}
	if o.Tenant == "" {
		return errors.New("--tenant is required: the tenant the job belongs to (a check against cancelling the wrong job)")
	}
	return nil
}

func (o *jobsCancelOptions) Run(ctx context.Context, c *cli) error {
	st, table, err := o.store(ctx, c)
	if err != nil {
		return err
	}
	before, err := st.Get(ctx, o.ID)
	if err != nil {
		return notFound(err, o.ID, table)
	}
	if before.Tenant != o.Tenant {
		return fmt.Errorf("job %s belongs to tenant %q, not %q: nothing cancelled", o.ID, before.Tenant, o.Tenant)
	}
	if before.Status.Final() {
		return o.ended(c, before.Status, &before)
	}
	reason := o.Reason
	if reason == "" {
		reason = "cancelled by an operator (fifoworker jobs cancel)"
	}
	// Strict: a job someone else cancelled after the read is ended, not a
	// success of this command's.
	after, err := st.Cancel(ctx, jobs.CancelRequest{JobID: o.ID, Reason: reason, Strict: true})
	var final *jobs.FinalError
	switch {
	case errors.As(err, &final): // it ended after the read
		var now *jobs.Job
		if j, err := st.Get(ctx, o.ID); err == nil && j.Status.Final() {
			now = &j
		}
		return o.ended(c, final.Status, now)
	case err != nil:
		return notFound(err, o.ID, table)
	}
	if o.JSON {
		return printJSON(c.stdout, map[string]any{"job": toJobJSON(&after), "previous_version": before.Version, "changed": true})
	}
	fmt.Fprintf(c.stdout, "job %s cancelled: version %d → %d, generation %d → %d", o.ID, before.Version, after.Version, before.Generation, after.Generation)
	if before.Status == jobs.StatusRunning {
		fmt.Fprintf(c.stdout, " (the worker of generation %d can write nothing more)", before.Generation)
	}
	fmt.Fprintln(c.stdout)
	return nil
}

// ended is the one rule for every job that already ended, cancelled
// included: exit 1, nothing changed (as the API's DELETE answers 409
// job_final); --json still says how it ended.
func (o *jobsCancelOptions) ended(c *cli, status jobs.Status, j *jobs.Job) error {
	if o.JSON && j != nil {
		_ = printJSON(c.stdout, map[string]any{"job": toJobJSON(j), "previous_version": j.Version, "changed": false})
	}
	return fmt.Errorf("job %s already ended %s: nothing cancelled", o.ID, status)
}

// streamJobs writes every job of the listing o (from o.Token on) to w,
// one JSON object a line, a page at a time.
func streamJobs(ctx context.Context, w io.Writer, st jobs.ListStore, o jobs.ListOptions, now time.Time) error {
	enc := json.NewEncoder(w)
	for {
		page, err := jobs.List(ctx, st, o, now)
		if err != nil {
			return err
		}
		for i := range page.Jobs {
			if err := enc.Encode(toJobJSON(&page.Jobs[i])); err != nil {
				return err
			}
		}
		if !page.More {
			return nil
		}
		o.Token = page.Token
	}
}

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeFormat)
}

// printJob shows one job for a person.
func printJob(w io.Writer, j *jobs.Job, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("job", j.ID)
	row("tenant", j.Tenant)
	row("intent", j.IntentID)
	row("status", string(j.Status))
	row("generation", fmt.Sprint(j.Generation))
	row("version", fmt.Sprint(j.Version))
	row("progress", fmt.Sprint(j.Progress))
	switch {
	case j.LeaseOwner == "":
		row("lease", "none (never claimed)")
	case j.Status.Final():
		row("lease", fmt.Sprintf("%s until %s (the job has ended)", j.LeaseOwner, when(j.LeaseExpiresAt)))
	case j.LeaseExpiresAt.After(now):
		row("lease", fmt.Sprintf("%s until %s (held)", j.LeaseOwner, when(j.LeaseExpiresAt)))
	default:
		row("lease", fmt.Sprintf("%s until %s (ended)", j.LeaseOwner, when(j.LeaseExpiresAt)))
	}
	if j.Result.Key != "" {
		row("result", fmt.Sprintf("%s (%d bytes, sha256 %s)", j.Result.Key, j.Result.Size, j.Result.SHA256))
	} else {
		row("result", "-")
	}
	if j.Error.Code != "" {
		row("failure", strings.TrimSuffix(j.Error.Code+": "+oneLine(j.Error.Message, 200), ": "))
	}
	if j.Outbox.Type != "" {
		row("last message", fmt.Sprintf("%s %s", j.Outbox.Type, j.Outbox.ID))
	}
	if len(j.Spec) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(j.Spec)) {
			kv = append(kv, k+"="+j.Spec[k])
		}
		row("spec", oneLine(strings.Join(kv, " "), 200))
	}
	row("created", when(j.CreatedAt))
	row("updated", when(j.UpdatedAt))
	if !j.ExpiresAt.IsZero() {
		row("expires", when(j.ExpiresAt)+" (the table's TTL removes the item after this)")
	}
	_ = tw.Flush()
}

type resultJSON struct {
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

type failureJSON struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

type messageJSON struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Version int64  `json:"version"`
}

type jobJSON struct {
	ID             string            `json:"job_id"`
	Tenant         string            `json:"tenant"`
	IntentID       string            `json:"intent_id"`
	Status         string            `json:"status"`
	Generation     int64             `json:"generation"`
	Version        int64             `json:"version"`
	Progress       int64             `json:"progress"`
	LeaseOwner     string            `json:"lease_owner,omitempty"`
	LeaseExpiresAt *time.Time        `json:"lease_expires_at,omitempty"`
	Result         *resultJSON       `json:"result,omitempty"`
	Error          *failureJSON      `json:"error,omitempty"`
	LastMessage    *messageJSON      `json:"last_message,omitempty"`
	Spec           map[string]string `json:"spec,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
	ExpiresAt      *time.Time        `json:"expires_at,omitempty"`
	// History is the job's last transitions, oldest first (jobs.Job's
	// History), each with what it was.
	History []transitionJSON `json:"history,omitempty"`
}

type transitionJSON struct {
	Version    int64     `json:"version"`
	Status     string    `json:"status"`
	Generation int64     `json:"generation"`
	At         time.Time `json:"at"`
	Event      string    `json:"event,omitempty"` // the message the transition emitted
	Step       string    `json:"step"`            // what it was: "claimed", "lease ran out → taken over", ...
}

func toJobJSON(j *jobs.Job) jobJSON {
	out := jobJSON{
		ID: j.ID, Tenant: j.Tenant, IntentID: j.IntentID, Status: string(j.Status),
		Generation: j.Generation, Version: j.Version, Progress: j.Progress, LeaseOwner: j.LeaseOwner,
		Spec: j.Spec, CreatedAt: j.CreatedAt.UTC(), UpdatedAt: j.UpdatedAt.UTC(),
	}
	if !j.LeaseExpiresAt.IsZero() {
		t := j.LeaseExpiresAt.UTC()
		out.LeaseExpiresAt = &t
	}
	if !j.ExpiresAt.IsZero() {
		t := j.ExpiresAt.UTC()
		out.ExpiresAt = &t
	}
	if j.Result.Key != "" {
		out.Result = &resultJSON{Key: j.Result.Key, SHA256: j.Result.SHA256, Size: j.Result.Size}
	}
	if j.Error.Code != "" {
		out.Error = &failureJSON{Code: j.Error.Code, Message: j.Error.Message}
	}
	if j.Outbox.Type != "" {
		out.LastMessage = &messageJSON{ID: j.Outbox.ID, Type: j.Outbox.Type, Version: j.Outbox.Version}
	}
	for _, s := range jobs.Describe(j.History) {
		out.History = append(out.History, transitionJSON{Version: s.Version, Status: string(s.Status),
			Generation: s.Generation, At: s.At.UTC(), Event: s.Event, Step: s.String()})
	}
	return out
}

func printJobList(w io.Writer, table string, o jobs.ListOptions, page jobs.ListPage, asJSON bool) error {
	found, more := page.Jobs, page.More
	if asJSON {
		out := make([]jobJSON, 0, len(found))
		for i := range found {
			out = append(out, toJobJSON(&found[i]))
		}
		doc := map[string]any{"table": table, "jobs": out, "more": more}
		if more {
			doc["next_token"] = page.Token
		}
		return printJSON(w, doc)
	}
	what := "job"
	switch {
	case o.Status != "":
		what = string(o.Status) + " job"
	case o.LiveOnly:
		what = "live job"
	}
	if o.Tenant != "" {
		what += " of tenant " + o.Tenant
	}
	if len(found) == 0 {
		fmt.Fprintf(w, "no %s in table %s", what, table)
		if !o.LiveOnly && (o.Status == "" || o.Status.Final()) && o.Since > 0 {
			fmt.Fprintf(w, " (final ones: those that ended within %v)", o.Since)
		}
		fmt.Fprintln(w)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tTENANT\tSTATUS\tGEN\tVER\tPROGRESS\tUPDATED\tRESULT OR FAILURE")
	for i := range found {
		j := &found[i]
		detail := "-"
		switch {
		case j.Result.Key != "":
			detail = j.Result.Key
		case j.Error.Code != "":
			detail = j.Error.Code
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", j.ID, j.Tenant, j.Status, j.Generation, j.Version, j.Progress, when(j.UpdatedAt), detail)
	}
	_ = tw.Flush()
	if more {
		fmt.Fprintf(w, "(there may be more: raise --limit (now %d), or narrow with --tenant, --status, --live or --since)\n", o.Limit)
		fmt.Fprintf(w, "next page: --starting-token %s\n", page.Token)
	}
	return nil
}
