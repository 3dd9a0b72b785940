package worker_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// only is a registry of one task, the default: what a worker that runs one
// task is given.
func only(t testing.TB, work task.Task) *task.Registry {
	t.Helper()
	r, err := task.NewRegistry(task.RegistryConfig{Tasks: map[string]task.Task{"test": work}, Default: "test"})
	require.NoError(t, err)
	return r
}

// mustNew is worker.New, which cannot fail on a test's configuration.
func mustNew(t testing.TB, cfg worker.Config) *worker.Worker {
	t.Helper()
	w, err := worker.New(cfg)
	require.NoError(t, err)
	return w
}

// writes is a task that writes text and reports one item, with extension
// ext for every job.
func writes(ext, text string) task.Task {
	return task.Func(ext, func(_ context.Context, in task.Input) (task.Output, error) {
		_, err := io.WriteString(in.Out, text)
		return task.Output{Items: 1}, err
	})
}

// Each job runs the task its spec names, or the default; the result's
// extension is its task's.
func TestEachJobRunsTheTaskItsSpecNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tasks, err := task.NewRegistry(task.RegistryConfig{Default: "export", Tasks: map[string]task.Task{
		"export": writes("ndjson", "{}\n"), "wordcount": writes("json", `{"total":3}`),
	}})
	require.NoError(t, err)
	w := mustNew(t, worker.Config{Jobs: b.jobs, Candidates: b.candidates, Tasks: tasks})
	for id, tc := range map[string]struct {
		spec         map[string]string
		ext, content string
	}{
		"job-default": {nil, "ndjson", "{}\n"},
		"job-export":  {map[string]string{task.SpecTask: "export"}, "ndjson", "{}\n"},
		"job-count":   {map[string]string{task.SpecTask: "wordcount", "page_size": "5"}, "json", `{"total":3}`},
	} {
		_, msg := b.create(t, id, tc.spec)
		require.NoError(t, w.Handle(invocation(t, "req-1", time.Minute), msg), id)
		done := b.get(t, id)
		require.Equal(t, jobs.StatusCompleted, done.Status, id)
		key, err := candidate.ParseKey(done.Result.Key)
		require.NoError(t, err, id)
		require.Equal(t, tc.ext, key.Ext, id)
		require.Equal(t, tc.content, b.read(t, done.Result.Key), id)
	}
}

// A job whose spec names a task the worker does not run fails for good,
// after its claim and before anything runs: code unknown_task, a message
// naming the task and the known ones, nothing uploaded, the command
// acknowledged; its next delivery finds the job final.
func TestAnUnknownTaskFailsTheJobForGood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", map[string]string{task.SpecTask: "translate"})
	w := b.worker(mustNotRun(t))

	require.NoError(t, w.Handle(invocation(t, "req-1", time.Minute), msg))
	failed := b.get(t, "job-42")
	require.Equal(t, jobs.StatusFailed, failed.Status)
	require.Equal(t, worker.CodeUnknownTask, failed.Error.Code)
	require.Equal(t, `task: unknown task "translate" (spec key "task"; known tasks: test)`, failed.Error.Message)
	require.EqualValues(t, 1, failed.Generation, "one claim")
	require.EqualValues(t, 2, failed.Version, "the claim and the failure")
	require.Empty(t, b.s3.keys(), "nothing uploaded")
	require.Len(t, b.logs.find("names no task of this worker"), 1)

	require.NoError(t, w.Handle(invocation(t, "req-2", time.Minute), msg), "the next delivery finds the job final")
	require.EqualValues(t, 2, b.get(t, "job-42").Version)
}

// Ext is asked with the job, before Run, and the result's key carries what
// it chose for that job.
func TestExtIsAskedWithTheJobBeforeRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var asked []task.Job
	ran := false
	work := &formats{ext: func(j task.Job) string {
		require.False(t, ran, "Ext is asked before Run")
		asked = append(asked, j)
		return j.Spec["format"]
	}, run: func() { ran = true }}
	w := b.worker(work)
	for id, format := range map[string]string{"job-csv": "csv", "job-json": "json"} {
		ran = false
		_, msg := b.create(t, id, map[string]string{"format": format})
		require.NoError(t, w.Handle(invocation(t, "req-1", time.Minute), msg), id)
		done := b.get(t, id)
		require.Equal(t, "candidates/"+id+"/g0000000001/req-1_msg-"+id+"."+format, done.Result.Key)
		require.True(t, ran, id)
	}
	require.Len(t, asked, 2)
	for _, rec := range b.logs.find("result accepted") {
		require.Equal(t, "test", rec.Attrs["task"], "the attempt's log names its task")
	}
	require.Len(t, b.logs.find("result accepted"), 2)
	for _, j := range asked {
		require.Equal(t, "t-1", j.Tenant)
		require.EqualValues(t, 1, j.Generation)
		require.Contains(t, []string{"job-csv", "job-json"}, j.ID)
	}
}

// An extension outside the key's rule fails the job (task_failed) without
// running the task: the same job gets the same extension on every try.
func TestAnInvalidExtensionFailsTheJobWithoutRunning(t *testing.T) {
	t.Parallel()
	for _, ext := range []string{"", "TXT", "tar.gz", "abcdefghijklmnopq"} {
		b := setup(t)
		_, msg := b.create(t, "job-42", map[string]string{"format": ext})
		w := b.worker(&formats{ext: func(j task.Job) string { return j.Spec["format"] }, run: func() { t.Errorf("%q: the task ran", ext) }})
		require.NoError(t, w.Handle(invocation(t, "req-1", time.Minute), msg), ext)
		failed := b.get(t, "job-42")
		require.Equal(t, jobs.StatusFailed, failed.Status, ext)
		require.Equal(t, worker.CodeTaskFailed, failed.Error.Code, ext)
		require.Contains(t, failed.Error.Message, "extension", ext)
		require.Empty(t, b.s3.keys(), ext)
	}
	// 16 characters is within the rule.
	b := setup(t)
	_, msg := b.create(t, "job-42", map[string]string{"format": "abcdefghijklmnop"})
	require.NoError(t, b.worker(&formats{ext: func(j task.Job) string { return j.Spec["format"] }, run: func() {}}).Handle(invocation(t, "req-1", time.Minute), msg))
	require.Equal(t, jobs.StatusCompleted, b.get(t, "job-42").Status)
}

// What a task does to the spec it is given changes no other attempt's
// view of the job, nor the job: each claim reads the job afresh.
func TestTheTaskCannotChangeTheJobsSpec(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", map[string]string{"page_size": "5"})
	var seen []string
	w := b.worker(task.Func("txt", func(_ context.Context, in task.Input) (task.Output, error) {
		seen = append(seen, in.Job.Spec["page_size"])
		in.Job.Spec["page_size"] = "changed"
		return task.Output{}, errors.New("injected: retry")
	}))
	require.Error(t, w.Handle(invocation(t, "req-1", time.Minute), msg))
	b.clock.Advance(2 * time.Minute) // past the first attempt's lease: the next claim takes over
	require.Error(t, w.Handle(invocation(t, "req-2", 3*time.Minute), msg))
	require.Equal(t, []string{"5", "5"}, seen, "each attempt sees the job's spec")
	require.Equal(t, "5", b.get(t, "job-42").Spec["page_size"])
}

// formats is a task whose extension ext chooses from the job; run is
// called when it runs, and it writes one line.
type formats struct {
	ext func(task.Job) string
	run func()
}

func (f *formats) ValidateSpec(map[string]string) error { return nil }

func (f *formats) Ext(j task.Job) string { return f.ext(j) }

func (f *formats) Run(_ context.Context, in task.Input) (task.Output, error) {
	f.run()
	_, err := io.WriteString(in.Out, "x\n")
	return task.Output{Items: 1}, err
}

// New refuses each invalid configuration with ErrInvalidConfig, the field
// named in the message.
func TestNewRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	valid := func() worker.Config {
		return worker.Config{Jobs: b.store, Candidates: b.candidates, Tasks: only(t, lines())}
	}
	_, err := worker.New(valid())
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		change func(c *worker.Config)
		field  string
	}{
		"no jobs":           {func(c *worker.Config) { c.Jobs = nil }, "Jobs"},
		"no candidates":     {func(c *worker.Config) { c.Candidates = nil }, "Candidates"},
		"no tasks":          {func(c *worker.Config) { c.Tasks = nil }, "Tasks"},
		"negative skew":     {func(c *worker.Config) { c.LeaseSkew = -time.Nanosecond }, "LeaseSkew"},
		"skew over a bound": {func(c *worker.Config) { c.LeaseSkew = jobs.MaxClockSkew + time.Nanosecond }, "LeaseSkew"},
		"negative margin":   {func(c *worker.Config) { c.ClaimMargin = -time.Nanosecond }, "ClaimMargin"},
	} {
		cfg := valid()
		tc.change(&cfg)
		w, err := worker.New(cfg)
		require.ErrorIs(t, err, worker.ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
		require.Nil(t, w, name)
	}
	for name, change := range map[string]func(c *worker.Config){
		"skew at its bound": func(c *worker.Config) { c.LeaseSkew = jobs.MaxClockSkew },
		"zero margin":       func(c *worker.Config) { c.ClaimMargin = 0 },
	} {
		cfg := valid()
		change(&cfg)
		_, err := worker.New(cfg)
		require.NoError(t, err, name)
	}
}
