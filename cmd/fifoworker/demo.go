package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// runDemo is `fifoworker demo`: internal/dev/demo on a fresh stack named
// "demo", stopped afterwards. Its last line is the summary as JSON; the exit
// status is 0 only when every invariant held.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rie := fs.Bool("rie", os.Getenv("RIE") == "1", "run the built bootstraps under the runtime interface emulator (make demo RIE=1)")
	n := fs.Int("jobs", 300, "how many bulk jobs to submit, across tenants")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fmt.Fprintf(stdout, "fifoworker demo: the five functions of template.yaml on a local stack (worker timeout %ds, commands visibility %ds)\n",
		demo.WorkerTimeout, demo.Visibility)
	o := localstack.Options{Name: "demo", Progress: stderr}
	return withFreshStack(ctx, o, "template.yaml", demo.Prepare, "fifoworker", stderr, func(ctx context.Context, s *localstack.State, tpl *samtemplate.Template, res *localdeploy.Result) int {
		root, _ := os.Getwd()
		sum, err := demo.Run(ctx, demo.Options{
			State: s, Template: tpl, Deployed: res, StackName: "fifoworker", Jobs: *n, RIE: *rie,
			Root: root, LogDir: filepath.Join(localstack.DefaultCacheDir(), "demo-logs"), Out: stdout,
		})
		if err != nil {
			fmt.Fprintln(stderr, "fifoworker: demo:", err)
		}
		line, _ := json.Marshal(sum)
		fmt.Fprintln(stdout, string(line))
		if err != nil || !sum.OK {
			return 1
		}
		return 0
	})
}
