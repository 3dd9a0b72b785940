package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

var sweepUsage = fmt.Sprintf(`usage: fifoworker sweep [flags]

One run of the sweeper, built and run as the scheduled function builds and runs
it: it nudges the stuck jobs, repairs the projections of final jobs whose last
event was lost, and deletes orphan candidates, bounded by --max-items. It reads
and saves the function's cursors in the bucket, so it goes on where the last
run, scheduled or not, stopped. --dry-run decides and reports everything and
changes nothing, the cursors included.

flags:
  --dry-run             report what a run would do; write nothing
  --json                the report as JSON (the function's result), for scripts
  -v                    log each action to stderr
  --stack NAME          a local stack's env file gives the endpoints and resources (fifoworker help)
  --jobs-table NAME     the jobs table (default: FIFOWORKER_JOBS_TABLE_NAME)
  --views-table NAME    the projector's views (default: FIFOWORKER_VIEWS_TABLE_NAME)
  --totals-table NAME   the projector's totals (default: FIFOWORKER_TOTALS_TABLE_NAME)
  --bucket NAME         the candidates bucket, which keeps the cursors (default: FIFOWORKER_CANDIDATES_BUCKET_NAME)
  --timeout D           how long the run may take, as the function's timeout (default 2m)

the function's settings (defaults: the function's; pass what the deployment sets):
  --grace D             SWEEP_GRACE: how old an orphan candidate must be to be deleted (default %v)
  --stuck-after D       SWEEP_STUCK_AFTER: how long a job must be unchanged to be nudged (default %v)
  --repair-after D      SWEEP_REPAIR_AFTER: how long after its end a job's projection is checked (default %v)
  --recheck-after D     SWEEP_RECHECK_AFTER: how long after its end it is checked again, beyond --repair-after (default %v, or twice --repair-after if longer)
  --repair-budget D     SWEEP_REPAIR_BUDGET: how long a run may go on checking final jobs past its first --max-items, 0 for not at all (default %v)
  --max-items N         SWEEP_MAX_ITEMS: the bound of a run (default %d)
  --max-generations N   MAX_GENERATIONS: the recovery policy, as the worker's (default %d)

Exit status: 0 done, 1 failed (a missing table or bucket, a request that
failed: the report counts them), 2 a usage error.
`, sweeper.DefaultGrace, sweeper.DefaultStuckAfter, sweeper.DefaultRepairAfter, sweeper.DefaultRecheckAfter, lambdawire.DefaultRepairBudget,
	sweeper.DefaultMaxItems, jobs.DefaultMaxGenerations)

// sweepTarget is what a sweep runs on: the settings lambdawire.Sweeper
// reads, and where each came from (for the error that says one is wrong).
type sweepTarget struct {
	Settings map[string]string
	Hints    map[string]string
}

// sweepFunc is one run of the sweeper: the scheduled function's handler.
type sweepFunc func(context.Context, sweeper.Options) (sweeper.Report, error)

// sweeper builds the function's sweeper from the settings, as the
// function does, then checks that its tables and bucket exist.
func (o awsOpener) sweeper(ctx context.Context, t sweepTarget, log *slog.Logger) (sweepFunc, error) {
	cfg, err := o.load(ctx)
	if err != nil {
		return nil, err
	}
	run, err := lambdawire.Sweeper(lambdawire.NewEnvFrom(t.Settings), cfg, log)
	if err != nil {
		return nil, flagWords(err)
	}
	db := lambdawire.DynamoDB(cfg)
	for _, setting := range []string{"JOBS_TABLE", "VIEWS_TABLE", "TOTALS_TABLE"} {
		if err := checkTable(ctx, db, t.Settings[setting], t.Hints[setting]); err != nil {
			return nil, err
		}
	}
	if err := checkBucket(ctx, lambdawire.S3(cfg), t.Settings["CANDIDATES_BUCKET"], t.Hints["CANDIDATES_BUCKET"]); err != nil {
		return nil, err
	}
	return run, nil
}

// sweepFlags maps the function's settings to the flags that set them.
var sweepFlags = []struct{ setting, flag, output string }{
	{"JOBS_TABLE", "jobs-table", "JobsTableName"},
	{"VIEWS_TABLE", "views-table", "ViewsTableName"},
	{"TOTALS_TABLE", "totals-table", "TotalsTableName"},
	{"CANDIDATES_BUCKET", "bucket", "CandidatesBucketName"},
	{"SWEEP_GRACE", "grace", ""},
	{"SWEEP_STUCK_AFTER", "stuck-after", ""},
	{"SWEEP_REPAIR_AFTER", "repair-after", ""},
	{"SWEEP_RECHECK_AFTER", "recheck-after", ""},
	{"SWEEP_REPAIR_BUDGET", "repair-budget", ""},
	{"SWEEP_MAX_ITEMS", "max-items", ""},
	{"MAX_GENERATIONS", "max-generations", ""},
}

func sweepCmd(ctx context.Context, args []string, env opsEnv, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, sweepUsage)
		return 0
	}
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, sweepUsage) }
	dry := fs.Bool("dry-run", false, "change nothing")
	asJSON := fs.Bool("json", false, "JSON output")
	verbose := fs.Bool("v", false, "log each action")
	names := map[string]*string{}
	for _, f := range sweepFlags[:4] {
		names[f.setting] = fs.String(f.flag, "", f.output)
	}
	grace := fs.Duration("grace", 0, "SWEEP_GRACE")
	stuckAfter := fs.Duration("stuck-after", 0, "SWEEP_STUCK_AFTER")
	repairAfter := fs.Duration("repair-after", 0, "SWEEP_REPAIR_AFTER")
	recheckAfter := fs.Duration("recheck-after", 0, "SWEEP_RECHECK_AFTER")
	repairBudget := fs.Duration("repair-budget", 0, "SWEEP_REPAIR_BUDGET")
	maxItems := fs.Int("max-items", 0, "SWEEP_MAX_ITEMS")
	maxGenerations := fs.Int("max-generations", 0, "MAX_GENERATIONS")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long the run may take")
	stack := stackFlag(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "fifoworker sweep: unexpected arguments %q\n\n%s", pos, sweepUsage)
		return 2
	}
	if *timeout <= sweeper.DeadlineReserve {
		fmt.Fprintf(stderr, "fifoworker sweep: --timeout %v: more than the %v a run keeps to save its cursors\n", *timeout, sweeper.DeadlineReserve)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "fifoworker sweep:", err)
		return 1
	}
	log := cliLogger(stderr, *verbose)
	env, code := env.targetOf("sweep", *stack, log, stderr)
	if code != 0 {
		return code
	}
	t := sweepTarget{Settings: map[string]string{}, Hints: map[string]string{}}
	for _, f := range sweepFlags {
		t.Hints[f.setting] = "--" + f.flag
		if f.output == "" {
			continue
		}
		v, err := env.resource(*names[f.setting], f.output, f.flag)
		if err != nil {
			return fail(err)
		}
		t.Settings[f.setting] = v
		t.Hints[f.setting] = env.hint(*names[f.setting], f.flag, f.output)
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "grace":
			t.Settings["SWEEP_GRACE"] = grace.String()
		case "stuck-after":
			t.Settings["SWEEP_STUCK_AFTER"] = stuckAfter.String()
		case "repair-after":
			t.Settings["SWEEP_REPAIR_AFTER"] = repairAfter.String()
		case "recheck-after":
			t.Settings["SWEEP_RECHECK_AFTER"] = recheckAfter.String()
		case "repair-budget":
			t.Settings["SWEEP_REPAIR_BUDGET"] = repairBudget.String()
		case "max-items":
			t.Settings["SWEEP_MAX_ITEMS"] = strconv.Itoa(*maxItems)
		case "max-generations":
			t.Settings["MAX_GENERATIONS"] = strconv.Itoa(*maxGenerations)
		}
	})
	run, err := env.open.sweeper(ctx, t, log)
	if err != nil {
		return fail(err)
	}
	rctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	rep, runErr := run(rctx, sweeper.Options{DryRun: *dry})
	code = 0
	if *asJSON {
		code = printJSON(stdout, rep)
	} else {
		printReport(stdout, &rep, t)
	}
	if runErr != nil {
		return fail(runErr)
	}
	return code
}

// flagWords names the flags in lambdawire's error about the function's
// settings.
func flagWords(err error) error {
	pairs := []string{"lambdawire: misconfigured function: ", ""}
	for _, f := range sweepFlags {
		pairs = append(pairs, f.setting, "--"+f.flag)
	}
	return fmt.Errorf("%s", strings.NewReplacer(pairs...).Replace(err.Error()))
}

// printReport shows a sweep's report for a person.
func printReport(w io.Writer, r *sweeper.Report, t sweepTarget) {
	did := func(done, would int) int {
		if r.DryRun {
			return would
		}
		return done
	}
	verb := func(done, would string) string {
		if r.DryRun {
			return would
		}
		return done
	}
	if r.DryRun {
		fmt.Fprintf(w, "dry run on table %s and bucket %s: nothing was changed\n\n", t.Settings["JOBS_TABLE"], t.Settings["CANDIDATES_BUCKET"])
	} else {
		fmt.Fprintf(w, "sweep of table %s and bucket %s\n\n", t.Settings["JOBS_TABLE"], t.Settings["CANDIDATES_BUCKET"])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "stuck jobs\t%d listed: %d %s, %d refused (the job moved on)\n",
		r.Stuck, did(r.Nudged, r.WouldNudge), verb("nudged", "would be nudged"), r.NudgeRefused)
	fmt.Fprintf(tw, "final jobs\t%d checked: %d %s; %s\n",
		r.Finished, did(r.Repaired, r.WouldRepair), verb("repaired", "would be repaired"), repairWords(r.RepairCursor))
	fmt.Fprintf(tw, "candidates\t%d examined: %d %s; kept %d of live generations, %d results, %d within the grace; %d not candidates\n",
		r.Examined, did(r.Deleted, r.WouldDelete), verb("deleted", "would be deleted"), r.KeptCurrent, r.KeptResult, r.KeptGrace, r.Unparsable)
	switch {
	case r.Wrapped:
		fmt.Fprintf(tw, "stopped at\tthe end of the bucket\n")
	case r.Cursor == "":
		fmt.Fprintf(tw, "stopped at\tthe beginning of the bucket\n")
	default:
		fmt.Fprintf(tw, "stopped at\t%s\n", r.Cursor)
	}
	if r.DryRun {
		fmt.Fprintf(tw, "\t(a dry run saves neither position: the next run starts where the last real one stopped)\n")
	}
	fmt.Fprintf(tw, "errors\t%d\n", r.Errors)
	if r.OutOfTime {
		fmt.Fprintf(tw, "out of time\tthe run stopped early; the next one goes on from the cursors\n")
	}
	fmt.Fprintf(tw, "took\t%v\n", time.Duration(r.ElapsedMS)*time.Millisecond)
	_ = tw.Flush()
}

// repairWords says how far the check of final jobs went: its cursor is
// the finished index's key of the last job checked, or a time alone
// (jobs.FinishedKey, jobs.FinishedBound).
func repairWords(cursor string) string {
	at, id, _ := strings.Cut(cursor, "#")
	ms, err := strconv.ParseInt(at, 10, 64)
	switch {
	case cursor == "":
		return "none checked yet"
	case err != nil:
		return "checked through " + cursor
	case id == "":
		return "checked through the jobs that ended before " + when(time.UnixMilli(ms))
	}
	return fmt.Sprintf("checked through %s, which ended %s", id, when(time.UnixMilli(ms)))
}
