package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

const jobsUsage = `usage: fifoworker jobs <get|list|cancel> [id] [flags]

  get <id>                 one job: status, generation, version, lease, result, failure, times
  list                     the jobs that are not final, least recently changed first, then the
                           final jobs that ended within --since, in the order they ended
  cancel <id> --tenant T   end a pending or running job; its generation moves on, so a worker
                           still running it can write nothing more

flags:
  --stack NAME    a local stack's env file gives the endpoints and the table (fifoworker help)
  --table NAME    the jobs table (default: FIFOWORKER_JOBS_TABLE_NAME)
  --json          one JSON document on stdout, for scripts
  --tenant T      list: only this tenant's jobs; cancel: the job's tenant (required)
  --live          list: only the jobs that are not final
  --since D       list: the final jobs that ended within D (default 24h; 0: all the table keeps)
  --limit N       list: at most N jobs a page (default 50, at most 1000)
  --starting-token T
                  list: go on after the last job of the page that printed T (text: a
                  "next page" line; --json: "next_token"), with the same --tenant, --live
                  and --since. A job that did not change meanwhile is shown exactly once;
                  one that changed may show again as it is now (a job that ended, among
                  the final ones); the indexes lag a moment behind the table
  --all           list, with --json: every job, page after page of --limit (default 1000),
                  as NDJSON: one job's JSON object a line
  --reason TEXT   cancel: recorded as the cancellation's message

Exit status: 0 done, 1 failed (a missing table or job, a job of another
tenant), 2 a usage error. cancel exits 0 only when it cancelled the job: a
job that already ended, completed, failed or cancelled alike, is left as it
is and exits 1, saying how it ended (with --json, stdout still has the job
and "changed": false).
`

func jobsCmd(ctx context.Context, args []string, env opsEnv, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 0 {
			fmt.Fprint(stderr, jobsUsage)
			return 2
		}
		fmt.Fprint(stdout, jobsUsage)
		return 0
	}
	verb := args[0]
	switch verb {
	case "get", "list", "cancel":
	default:
		fmt.Fprintf(stderr, "fifoworker jobs: unknown command %q\n\n%s", verb, jobsUsage)
		return 2
	}
	fs := flag.NewFlagSet("jobs "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	table := fs.String("table", "", "the jobs table")
	asJSON := fs.Bool("json", false, "JSON output")
	tenant := fs.String("tenant", "", "the tenant")
	live := fs.Bool("live", false, "only jobs that are not final")
	since := fs.Duration("since", 24*time.Hour, "final jobs that ended within this")
	limit := fs.Int("limit", jobs.DefaultListLimit, "at most this many jobs a page")
	token := fs.String("starting-token", "", "go on after the page that printed this token")
	all := fs.Bool("all", false, "with --json: every job, one a line (NDJSON)")
	reason := fs.String("reason", "", "the cancellation's message")
	stack := stackFlag(fs)
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return 2
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fifoworker jobs %s: %s\n", verb, fmt.Sprintf(format, a...))
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "fifoworker jobs %s: %v\n", verb, err)
		return 1
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var id string
	switch verb {
	case "list":
		if len(pos) > 0 {
			return usageErr("list takes no job id (got %q)", pos)
		}
		if *limit < 1 || *limit > jobs.MaxListLimit {
			return usageErr("--limit %d: 1 to %d", *limit, jobs.MaxListLimit)
		}
		if *all && !*asJSON {
			return usageErr("--all streams NDJSON: give --json too")
		}
		if *since < 0 {
			return usageErr("--since %v is negative", *since)
		}
		if *live && set["since"] {
			return usageErr("--since is about final jobs, which --live leaves out")
		}
		for _, f := range []string{"reason"} {
			if set[f] {
				return usageErr("--%s is cancel's", f)
			}
		}
	default:
		if len(pos) != 1 {
			return usageErr("name exactly one job id (got %q)", pos)
		}
		id = pos[0]
		if err := jobs.ValidateID(id); err != nil {
			return usageErr("%v", err)
		}
		for _, f := range []string{"live", "since", "limit", "starting-token", "all"} {
			if set[f] {
				return usageErr("--%s is list's", f)
			}
		}
		if verb == "get" && (set["tenant"] || set["reason"]) {
			return usageErr("--tenant and --reason are list's and cancel's")
		}
		if verb == "cancel" && *tenant == "" {
			return usageErr("--tenant is required: the tenant the job belongs to (a check against cancelling the wrong job)")
		}
	}
	env, code := env.targetOf("jobs "+verb, *stack, cliLogger(stderr, false), stderr)
	if code != 0 {
		return code
	}
	name, err := env.resource(*table, "JobsTableName", "table")
	if err != nil {
		return fail(err)
	}
	st, err := env.open.jobsStore(ctx, name, env.hint(*table, "table", "JobsTableName"))
	if err != nil {
		return fail(err)
	}
	now := env.now()
	notFound := func(err error) int {
		if errors.Is(err, jobs.ErrNotFound) {
			return fail(fmt.Errorf("job %s not found in table %s", id, name))
		}
		return fail(err)
	}
	switch verb {
	case "get":
		j, err := st.Get(ctx, id)
		if err != nil {
			return notFound(err)
		}
		if *asJSON {
			return printJSON(stdout, toJobJSON(&j))
		}
		printJob(stdout, &j, now)
		return 0
	case "list":
		o := jobs.ListOptions{Tenant: *tenant, LiveOnly: *live, Since: *since, Limit: *limit, Token: *token}
		if *live {
			o.Since = 0 // --since's default is about final jobs
		}
		if *all && !set["limit"] {
			o.Limit = jobs.MaxListLimit
		}
		listErr := func(err error) int {
			if errors.Is(err, jobs.ErrBadToken) {
				return usageErr("--starting-token: %v", err)
			}
			return fail(err)
		}
		if *all {
			if err := streamJobs(ctx, stdout, st, o, now); err != nil {
				return listErr(err)
			}
			return 0
		}
		page, err := jobs.List(ctx, st, o, now)
		if err != nil {
			return listErr(err)
		}
		return printJobList(stdout, name, o, page, *asJSON)
	default: // cancel
		before, err := st.Get(ctx, id)
		if err != nil {
			return notFound(err)
		}
		if before.Tenant != *tenant {
			return fail(fmt.Errorf("job %s belongs to tenant %q, not %q: nothing cancelled", id, before.Tenant, *tenant))
		}
		// One rule for every job that already ended, cancelled included:
		// exit 1, nothing changed (as the API's DELETE answers 409
		// job_final); --json still says how it ended.
		ended := func(status jobs.Status, j *jobs.Job) int {
			if *asJSON && j != nil {
				_ = printJSON(stdout, map[string]any{"job": toJobJSON(j), "previous_version": j.Version, "changed": false})
			}
			return fail(fmt.Errorf("job %s already ended %s: nothing cancelled", id, status))
		}
		if before.Status.Final() {
			return ended(before.Status, &before)
		}
		msg := *reason
		if msg == "" {
			msg = "cancelled by an operator (fifoworker jobs cancel)"
		}
		// Strict: a job someone else cancelled after the read is ended,
		// not a success of this command's.
		after, err := st.Cancel(ctx, jobs.CancelRequest{JobID: id, Reason: msg, Strict: true})
		var final *jobs.FinalError
		switch {
		case errors.As(err, &final): // it ended after the read
			var now *jobs.Job
			if j, err := st.Get(ctx, id); err == nil && j.Status.Final() {
				now = &j
			}
			return ended(final.Status, now)
		case err != nil:
			return notFound(err)
		}
		if *asJSON {
			return printJSON(stdout, map[string]any{"job": toJobJSON(&after), "previous_version": before.Version, "changed": true})
		}
		fmt.Fprintf(stdout, "job %s cancelled: version %d → %d, generation %d → %d", id, before.Version, after.Version, before.Generation, after.Generation)
		if before.Status == jobs.StatusRunning {
			fmt.Fprintf(stdout, " (the worker of generation %d can write nothing more)", before.Generation)
		}
		fmt.Fprintln(stdout)
		return 0
	}
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
	return out
}

func printJobList(w io.Writer, table string, o jobs.ListOptions, page jobs.ListPage, asJSON bool) int {
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
	if o.LiveOnly {
		what = "live job"
	}
	if o.Tenant != "" {
		what += " of tenant " + o.Tenant
	}
	if len(found) == 0 {
		fmt.Fprintf(w, "no %s in table %s", what, table)
		if !o.LiveOnly && o.Since > 0 {
			fmt.Fprintf(w, " (final ones: those that ended within %v)", o.Since)
		}
		fmt.Fprintln(w)
		return 0
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
		fmt.Fprintf(w, "(there may be more: raise --limit (now %d), or narrow with --tenant, --live or --since)\n", o.Limit)
		fmt.Fprintf(w, "next page: --starting-token %s\n", page.Token)
	}
	return 0
}
