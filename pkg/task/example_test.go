package task_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// shout is a whole task: it writes its spec's "text" in capitals, as
// plain text or, when the spec asks for "format": "json", as a JSON
// string, and the result's extension follows the format.
type shout struct{}

// checkShout is shout's spec check, a function of the spec alone: the
// program that checks specs (intake) needs it without building the task.
// Its messages name the key and not the task: the registry and the
// checker prefix the task's name.
func checkShout(spec map[string]string) error {
	for key := range spec {
		if key != task.SpecTask && key != "text" && key != "format" {
			return fmt.Errorf("spec key %.80q is not one of shout's (task, text, format)", key)
		}
	}
	if spec["text"] == "" {
		return errors.New(`spec "text" is required`)
	}
	if f := spec["format"]; f != "" && f != "txt" && f != "json" {
		return fmt.Errorf(`spec "format" %.80q is not "txt" or "json"`, f)
	}
	return nil
}

func (shout) ValidateSpec(spec map[string]string) error { return checkShout(spec) }

func (shout) Ext(job task.Job) string {
	if job.Spec["format"] == "json" {
		return "json"
	}
	return "txt"
}

func (s shout) Run(_ context.Context, in task.Input) (task.Output, error) {
	// A job created before a rule changed reaches Run unchecked: Run holds
	// the spec to the same check, and no retry can fix a bad spec.
	if err := checkShout(in.Job.Spec); err != nil {
		return task.Output{}, fifo.Permanent(err)
	}
	text := strings.ToUpper(in.Job.Spec["text"])
	var err error
	if s.Ext(in.Job) == "json" {
		_, err = fmt.Fprintf(in.Out, "%q\n", text)
	} else {
		_, err = fmt.Fprintln(in.Out, text)
	}
	return task.Output{Items: 1}, err
}

// Two tasks, "shout" and a default one. Intake holds their spec checks
// alone (a Checker), the worker the tasks (a Registry): each spec picks
// its task, whose check refuses it or whose Ext, then Run, make the
// result. The worker does the same with each job it claims, writing to
// the attempt's candidate instead of a buffer.
func Example_addingATask() {
	hello := task.Func("txt", func(_ context.Context, in task.Input) (task.Output, error) {
		_, err := fmt.Fprintf(in.Out, "hello, %s\n", in.Job.Tenant)
		return task.Output{Items: 1}, err
	})
	// What intake is given: no task, only their checks.
	checks, err := task.NewChecker(task.CheckerConfig{
		Default: "hello",
		Checks:  map[string]task.SpecCheck{"hello": hello.ValidateSpec, "shout": checkShout},
	})
	if err != nil {
		panic(err)
	}
	// What the worker is given: the tasks themselves.
	tasks, err := task.NewRegistry(task.RegistryConfig{
		Default: "hello",
		Tasks:   map[string]task.Task{"hello": hello, "shout": shout{}},
	})
	if err != nil {
		panic(err)
	}
	for _, spec := range []map[string]string{
		{},
		{"task": "shout", "text": "ordered work"},
		{"task": "shout", "text": "fenced", "format": "json"},
		{"task": "shout"},
		{"task": "shout", "text": "x", "colour": "red"},
		{"task": "whisper"},
	} {
		// What intake asks before it creates the job.
		if err := checks.ValidateSpec(spec); err != nil {
			fmt.Printf("refused (unknown task: %t): %v\n", errors.Is(err, task.ErrUnknownTask), err)
			continue
		}
		// What the worker does with the job it claimed: the extension
		// first (it names the attempt's candidate), then Run.
		name, t, _ := tasks.Lookup(spec)
		job := task.Job{ID: "job-42", Tenant: "t-1", Spec: spec, Generation: 1}
		ext := t.Ext(job)
		var out bytes.Buffer
		res, err := t.Run(context.Background(), task.Input{Job: job, AttemptID: "req-1_msg-1", Out: &out,
			Progress: func(context.Context, int64) error { return nil }})
		fmt.Printf("%s → result.%s, %d item(s), %v: %s", name, ext, res.Items, err, out.String())
	}
	// Output:
	// hello → result.txt, 1 item(s), <nil>: hello, t-1
	// shout → result.txt, 1 item(s), <nil>: ORDERED WORK
	// shout → result.json, 1 item(s), <nil>: "FENCED"
	// refused (unknown task: false): task shout: spec "text" is required
	// refused (unknown task: false): task shout: spec key "colour" is not one of shout's (task, text, format)
	// refused (unknown task: true): task: unknown task "whisper" (spec key "task"; known tasks: hello, shout)
}
