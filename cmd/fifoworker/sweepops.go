package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

const sweepLong = `One run of the sweeper, built and run as the scheduled function builds and runs
it: it nudges the stuck jobs, repairs the projections of final jobs whose last
event was lost, and deletes orphan candidates, bounded by --max-items. It reads
and saves the function's cursors in the bucket, so it goes on where the last
run, scheduled or not, stopped, and keeps its report there as the function
does (sweeper/last-run: the console shows the last run's). --dry-run decides
and reports everything and changes nothing, the cursors and the kept report
included.

The function's settings (--grace to --max-generations) default to the
function's own defaults: pass what the deployment sets.

Exit status: 0 done, 1 failed (a missing table or bucket, a request that
failed: the report counts them), 2 a usage error.`

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
	db := lambdawire.DynamoDB(cfg)
	settings := maps.Clone(t.Settings)
	recordedShards(ctx, db, settings)
	run, err := lambdawire.Sweeper(startup.NewEnvFrom(settings), cfg, log)
	if err != nil {
		return nil, flagWords(err)
	}
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

// recordedShards sets LIVE_SHARDS and TOTALS_SHARDS, which the deployment
// gives the function, to the counts the tables record (the Jobs table's
// live index, jobs.RecordedLiveShards; the Totals table's shards,
// projection.RecordedShards), so that a run walks every shard jobs were
// written with and finds each cursor in its shard; a table that records no
// count keeps the function's default. A table that cannot be read is left
// to the checks after the build, which name it.
func recordedShards(ctx context.Context, db *dynamodb.Client, settings map[string]string) {
	if table := settings["JOBS_TABLE"]; table != "" && settings["LIVE_SHARDS"] == "" {
		if n, err := jobs.RecordedLiveShards(ctx, db, table); err == nil {
			settings["LIVE_SHARDS"] = strconv.Itoa(min(n, jobs.MaxLiveShards))
		}
	}
	if table := settings["TOTALS_TABLE"]; table != "" && settings["TOTALS_SHARDS"] == "" {
		if n, ok, err := projection.RecordedShards(ctx, db, table); err == nil && ok {
			settings["TOTALS_SHARDS"] = strconv.Itoa(n)
		}
	}
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

// sweepOptions are `fifoworker sweep`'s.
type sweepOptions struct {
	Stack   string // a local stack whose env file names the resources
	DryRun  bool   // report what a run would do; write nothing
	JSON    bool   // the report as JSON (the function's result)
	Verbose bool   // log each action to stderr
	Timeout time.Duration

	// The resources, by the function's setting; "": the FIFOWORKER_*
	// variable's.
	JobsTable, ViewsTable, TotalsTable, Bucket string
	// Settings are the function's other settings the flags give, as its
	// environment would (SWEEP_GRACE: "1m30s"); one not given is the
	// function's default.
	Settings map[string]string
}

func (c *cli) sweepCmd() *cobra.Command {
	o := &sweepOptions{}
	cmd := &cobra.Command{
		Use: "sweep", Short: "one run of the sweeper (--dry-run: report, change nothing)", Long: sweepLong,
		Args: noArgs, RunE: c.choose(o, nil),
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.DryRun, "dry-run", false, "report what a run would do; write nothing")
	fs.BoolVar(&o.JSON, "json", false, "the report as JSON (the function's result), for scripts")
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "log each action to stderr")
	bindStackFlag(fs, &o.Stack)
	fs.StringVar(&o.JobsTable, "jobs-table", "", "the jobs table (default: FIFOWORKER_JOBS_TABLE_NAME)")
	fs.StringVar(&o.ViewsTable, "views-table", "", "the projector's views (default: FIFOWORKER_VIEWS_TABLE_NAME)")
	fs.StringVar(&o.TotalsTable, "totals-table", "", "the projector's totals (default: FIFOWORKER_TOTALS_TABLE_NAME)")
	fs.StringVar(&o.Bucket, "bucket", "", "the candidates bucket, which keeps the cursors (default: FIFOWORKER_CANDIDATES_BUCKET_NAME)")
	fs.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "how long the run may take, as the function's timeout")
	fs.Duration("grace", sweeper.DefaultGrace, "SWEEP_GRACE: how old an orphan candidate must be to be deleted")
	fs.Duration("stuck-after", sweeper.DefaultStuckAfter, "SWEEP_STUCK_AFTER: how long a job must be unchanged to be nudged")
	fs.Duration("repair-after", sweeper.DefaultRepairAfter, "SWEEP_REPAIR_AFTER: how long after its end a job's projection is checked")
	fs.Duration("recheck-after", sweeper.DefaultRecheckAfter, "SWEEP_RECHECK_AFTER: how long after its end it is checked again, beyond --repair-after (or twice --repair-after if longer)")
	fs.Duration("repair-budget", lambdawire.DefaultRepairBudget, "SWEEP_REPAIR_BUDGET: how long a run may go on checking final jobs past its first --max-items, 0 for not at all")
	fs.Int("max-items", sweeper.DefaultMaxItems, "SWEEP_MAX_ITEMS: the bound of a run")
	fs.Int("max-generations", jobs.DefaultMaxGenerations, "MAX_GENERATIONS: the recovery policy, as the worker's")
	// -v was the only spelling; --v, which the standard flag package took
	// too, is --verbose's old name.
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "v" {
			name = "verbose"
		}
		return pflag.NormalizedName(name)
	})
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		o.Settings = map[string]string{}
		for _, f := range sweepFlags[4:] {
			if cmd.Flags().Changed(f.flag) {
				o.Settings[f.setting] = cmd.Flags().Lookup(f.flag).Value.String()
			}
		}
	}
	return cmd
}

func (o *sweepOptions) Validate() error {
	if o.Timeout <= sweeper.DeadlineReserve {
		return fmt.Errorf("--timeout %v: more than the %v a run keeps to save its cursors", o.Timeout, sweeper.DeadlineReserve)
	}
	return nil
}

// resourceFlag is the value of the flag that names setting's resource.
func (o *sweepOptions) resourceFlag(setting string) string {
	return map[string]string{"JOBS_TABLE": o.JobsTable, "VIEWS_TABLE": o.ViewsTable, "TOTALS_TABLE": o.TotalsTable, "CANDIDATES_BUCKET": o.Bucket}[setting]
}

func (o *sweepOptions) Run(ctx context.Context, c *cli) error {
	log := cliLogger(c.stderr, o.Verbose)
	env, err := c.env.targetOf(o.Stack, log, c.stderr)
	if err != nil {
		return err
	}
	t := sweepTarget{Settings: maps.Clone(o.Settings), Hints: map[string]string{}}
	for _, f := range sweepFlags {
		t.Hints[f.setting] = "--" + f.flag
		if f.output == "" {
			continue
		}
		given := o.resourceFlag(f.setting)
		if t.Settings[f.setting], err = env.resource(given, f.output, f.flag); err != nil {
			return err
		}
		t.Hints[f.setting] = env.hint(given, f.flag, f.output)
	}
	run, err := env.open.sweeper(ctx, t, log)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	rep, runErr := run(rctx, sweeper.Options{DryRun: o.DryRun})
	if o.JSON {
		err = printJSON(c.stdout, rep)
	} else {
		printReport(c.stdout, &rep, t)
	}
	return errors.Join(runErr, err)
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
