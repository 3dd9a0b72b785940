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
	// Transport is the template's: "sqs" (or "", template.yaml) or "kafka"
	// (template-kafka.yaml, on the stack's Kafka broker).
	Transport string
	// Store is the arbiter's: "dynamodb" (or "") or "postgres"
	// (template-postgres.yaml, on the stack's PostgreSQL).
	Store string
	// Name is the local stack's (default "demo").
	Name string
}

// demoTemplates are the demo's template by transport.
var demoTemplates = map[string]string{"": "template.yaml", "sqs": "template.yaml", "kafka": "template-kafka.yaml"}

// demoStores are the stores the demo runs on, each transport's template
// by store: DynamoDB's are demoTemplates; PostgreSQL's are
// template-postgres.yaml and, once written, template-kafka-postgres.yaml.
var demoStores = map[string]map[string]string{
	"": demoTemplates, "dynamodb": demoTemplates,
	"postgres": {"": "template-postgres.yaml", "sqs": "template-postgres.yaml", "kafka": "template-kafka-postgres.yaml"},
}

func (c *cli) demoCmd() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "run the whole pipeline on sample jobs on the local AWS stack (exit 0 only when every invariant held)",
		Long: `Run the five functions of template.yaml (--transport kafka: template-kafka.yaml, on the
stack's Kafka broker) on a fresh local stack named "demo" (--name), stopped afterwards:
sample jobs across tenants, end to end. The last line is the summary as JSON, whose
"transport" says which, and "skipped" what was not checked on it. Exit status: 0 only
when every invariant held, 1 otherwise, 2 a usage error.`,
		Args: noArgs,
		RunE: c.choose(o, nil),
	}
	cmd.Flags().BoolVar(&o.RIE, "rie", os.Getenv("RIE") == "1", "run the built bootstraps under the runtime interface emulator (make demo RIE=1)")
	cmd.Flags().IntVar(&o.Jobs, "jobs", 300, "how many bulk jobs to submit, across tenants")
	cmd.Flags().StringVar(&o.Transport, "transport", "", `the commands' and events' transport: sqs (template.yaml; "" too) or kafka (template-kafka.yaml; make demo TRANSPORT=kafka)`)
	cmd.Flags().StringVar(&o.Store, "store", "", `the arbiter's store: dynamodb (the default; "" too) or postgres (template-postgres.yaml on the stack's PostgreSQL; make demo STORE=postgres)`)
	cmd.Flags().StringVar(&o.Name, "name", "", `the local stack's name ("": demo)`)
	return cmd
}

func (o *demoOptions) Validate() error {
	if _, ok := demoTemplates[o.Transport]; !ok {
		return fmt.Errorf("--transport %q: it is sqs or kafka", o.Transport)
	}
	if _, ok := demoStores[o.Store]; !ok {
		return fmt.Errorf("--store %q: it is dynamodb or postgres", o.Store)
	}
	return nil
}

// Run runs internal/dev/demo on a fresh stack named "demo" (or --name).
func (o *demoOptions) Run(ctx context.Context, c *cli) error {
	template := demoStores[o.Store][o.Transport]
	if o.Transport == "kafka" {
		fmt.Fprintf(c.stdout, "fifoworker demo: the five functions of %s on a local stack, on its Kafka broker (worker timeout %ds; a timed-out batch is retried by its mapping)\n",
			template, demo.WorkerTimeout)
	} else {
		fmt.Fprintf(c.stdout, "fifoworker demo: the five functions of %s on a local stack (worker timeout %ds, commands visibility %ds)\n",
			template, demo.WorkerTimeout, demo.Visibility)
	}
	stack, logs := localstack.Options{Name: o.Name}, filepath.Join(localstack.DefaultCacheDir(), "demo-logs")
	if stack.Name == "" {
		stack.Name = "demo"
	} else {
		logs += "-" + stack.Name // another demo's logs are not overwritten
	}
	d := deployFlags{Template: template, StackName: "fifoworker"}
	return withFreshStack(ctx, stack, d, demo.Prepare, c.stderr, func(ctx context.Context, s *localstack.State, tpl *samtemplate.Template, res *localdeploy.Result) error {
		root, _ := os.Getwd()
		sum, err := demo.Run(ctx, demo.Options{
			State: s, Template: tpl, Deployed: res, StackName: d.StackName, Jobs: o.Jobs, RIE: o.RIE,
			Root: root, LogDir: logs, Out: c.stdout,
		})
		return endDemo(c, sum, err)
	})
}

// demoHintCommands are the commands the demo's closing hint names, as the
// CLI's arguments (a test holds them to the CLI's verbs).
var demoHintCommands = [][]string{{"local", "serve"}, {"console"}}

// demoHint is the demo's closing hint for a newcomer who wants to look
// around. The demo stops its stack, so it names what starts one with the
// functions and the jobs API (make serve: `local serve`) and the console,
// which finds that stack without flags (the serve stack's env file).
const demoHint = `fifoworker demo: the demo's stack is stopped. To look around in the web console, start a stack
  with the functions and the jobs API:   make serve   (go run ./cmd/fifoworker local serve)
  then, in another shell:                go run ./cmd/fifoworker console
  and open the URL it prints (submit jobs with the curl lines make serve prints, then follow them).`

// endDemo says why the demo failed, if it did, then the hint, then the
// summary as JSON: the last line, which scripts read.
func endDemo(c *cli, sum demo.Summary, err error) error {
	line, _ := json.Marshal(sum)
	if err != nil {
		fmt.Fprintln(c.stderr, "fifoworker demo:", err)
	}
	fmt.Fprintln(c.stdout, demoHint)
	fmt.Fprintln(c.stdout, string(line))
	if err != nil || !sum.OK {
		return exitStatus(1)
	}
	return nil
}
