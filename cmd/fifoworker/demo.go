package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// demoOptions are `fifoworker demo`'s.
type demoOptions struct {
	RIE  bool // the built bootstraps under the runtime interface emulator
	Jobs int  // how many bulk jobs to submit, across tenants
}

func (c *cli) demoCmd() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "run the whole pipeline on sample jobs on the local AWS stack (exit 0 only when every invariant held)",
		Long: `Run the five functions of template.yaml on a fresh local stack named "demo", stopped
afterwards: sample jobs across tenants, end to end. The last line is the summary as
JSON. Exit status: 0 only when every invariant held, 1 otherwise, 2 a usage error.`,
		Args: noArgs,
		RunE: c.choose(o, nil),
	}
	cmd.Flags().BoolVar(&o.RIE, "rie", os.Getenv("RIE") == "1", "run the built bootstraps under the runtime interface emulator (make demo RIE=1)")
	cmd.Flags().IntVar(&o.Jobs, "jobs", 300, "how many bulk jobs to submit, across tenants")
	return cmd
}

func (o *demoOptions) Validate() error { return nil }

// Run runs internal/dev/demo on a fresh stack named "demo".
func (o *demoOptions) Run(ctx context.Context, c *cli) error {
	fmt.Fprintf(c.stdout, "fifoworker demo: the five functions of template.yaml on a local stack (worker timeout %ds, commands visibility %ds)\n",
		demo.WorkerTimeout, demo.Visibility)
	stack := localstack.Options{Name: "demo"}
	d := deployFlags{Template: "template.yaml", StackName: "fifoworker"}
	return withFreshStack(ctx, stack, d, demo.Prepare, c.stderr, func(ctx context.Context, s *localstack.State, tpl *samtemplate.Template, res *localdeploy.Result) error {
		root, _ := os.Getwd()
		sum, err := demo.Run(ctx, demo.Options{
			State: s, Template: tpl, Deployed: res, StackName: d.StackName, Jobs: o.Jobs, RIE: o.RIE,
			Root: root, LogDir: filepath.Join(localstack.DefaultCacheDir(), "demo-logs"), Out: c.stdout,
		})
		line, _ := json.Marshal(sum)
		if err != nil {
			fmt.Fprintln(c.stderr, "fifoworker demo:", err)
		}
		fmt.Fprintln(c.stdout, string(line))
		if err != nil || !sum.OK {
			return exitStatus(1)
		}
		return nil
	})
}
