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

func (shout) ValidateSpec(spec map[string]string) error {
	if spec["text"] == "" {
		return errors.New(`shout: spec "text" is required`)
	}
	if f := spec["format"]; f != "" && f != "txt" && f != "json" {
		return fmt.Errorf(`shout: spec "format" %q is not "txt" or "json"`, f)
	}
	return nil
}

func (shout) Ext(job task.Job) string {
	if job.Spec["format"] == "json" {
		return "json"
	}
	return "txt"
}

func (s shout) Run(_ context.Context, in task.Input) (task.Output, error) {
	// A job created before a rule changed reaches Run unchecked: Run holds
	// the spec to the same check, and no retry can fix a bad spec.
	if err := s.ValidateSpec(in.Job.Spec); err != nil {
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

// A registry of two tasks, "shout" and a default one; each spec picks its
// task, which checks the spec, chooses the result's extension and writes
// the result. The worker does the same with each job's spec, writing to
// the attempt's candidate instead of a buffer.
func Example_addingATask() {
	tasks, err := task.NewRegistry(task.RegistryConfig{
		Default: "hello",
		Tasks: map[string]task.Task{
			"hello": task.Func("txt", func(_ context.Context, in task.Input) (task.Output, error) {
				_, err := fmt.Fprintf(in.Out, "hello, %s\n", in.Job.Tenant)
				return task.Output{Items: 1}, err
			}),
			"shout": shout{},
		},
	})
	if err != nil {
		panic(err)
	}
	for _, spec := range []map[string]string{
		{},
		{"task": "shout", "text": "ordered work"},
		{"task": "shout", "text": "fenced", "format": "json"},
		{"task": "shout"},
		{"task": "whisper"},
	} {
		// What intake asks before it creates the job.
		if err := tasks.ValidateSpec(spec); err != nil {
			fmt.Printf("refused (unknown task: %t): %v\n", errors.Is(err, task.ErrUnknownTask), err)
			continue
		}
		// What the worker does with the job it claimed.
		name, t, _ := tasks.Lookup(spec)
		job := task.Job{ID: "job-42", Tenant: "t-1", Spec: spec, Generation: 1}
		var out bytes.Buffer
		res, err := t.Run(context.Background(), task.Input{Job: job, AttemptID: "req-1_msg-1", Out: &out,
			Progress: func(context.Context, int64) error { return nil }})
		fmt.Printf("%s → result.%s, %d item(s), %v: %s", name, t.Ext(job), res.Items, err, out.String())
	}
	// Output:
	// hello → result.txt, 1 item(s), <nil>: hello, t-1
	// shout → result.txt, 1 item(s), <nil>: ORDERED WORK
	// shout → result.json, 1 item(s), <nil>: "FENCED"
	// refused (unknown task: false): task shout: shout: spec "text" is required
	// refused (unknown task: true): task: unknown task "whisper" (spec key "task"; known tasks: hello, shout)
}
