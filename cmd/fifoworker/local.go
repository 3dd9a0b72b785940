package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

const localLong = `The local AWS stack: emulators of SQS, DynamoDB (and Streams) and S3, installed at
pinned versions into the cache on first use, a Kafka broker and a PostgreSQL 18 server,
with their state, ports and logs per stack name.

Exit status: 0 done, 1 failed (the stack did not start or deploy; status: an
emulator not running or not answering), 2 a usage error; run: the command's own
exit status.`

const localExample = `  eval "$(fifoworker local up)"
  fifoworker local run --name test -- go test -tags integration ./...
  fifoworker local serve --worker-timeout 10`

func (c *cli) localCmd() *cobra.Command {
	g := group("local", "the local AWS stack: up, down, status, env, deploy, run, serve (the jobs API over HTTP)",
		localLong, c.localUpCmd(), c.localDownCmd(), c.localStatusCmd(), c.localEnvCmd(), c.localDeployCmd(), c.localRunCmd(), c.localServeCmd(), c.localKafkaBrokerCmd(), c.localPostgresCmd())
	g.Example = localExample
	return g
}

// bindStack binds the flags that name a local stack and where it lives;
// a stack is --name defaultName unless it says otherwise.
func bindStack(fs *pflag.FlagSet, o *localstack.Options, defaultName string) {
	fs.StringVar(&o.Name, "name", defaultName, "stack name (state, ports and logs are per name)")
	fs.StringVar(&o.CacheDir, "cache", localstack.DefaultCacheDir(), "where tools and stack state live")
}

// startFlags are the flags bindStart binds.
var startFlags = []string{"region", "sqs-port", "dynamodb-port", "s3-port", "kafka-port", "postgres-port"}

// bindStart binds the flags of a stack that starts.
func bindStart(fs *pflag.FlagSet, o *localstack.Options) {
	fs.StringVar(&o.Region, "region", "eu-west-1", "AWS region the stack reports")
	fs.IntVar(&o.Ports.SQS, "sqs-port", 0, "SQS emulator port (0: a free one)")
	fs.IntVar(&o.Ports.DynamoDB, "dynamodb-port", 0, "DynamoDB Local port (0: a free one)")
	fs.IntVar(&o.Ports.S3, "s3-port", 0, "S3 emulator port (0: a free one)")
	fs.IntVar(&o.Ports.Kafka, "kafka-port", 0, "Kafka broker port (0: a free one)")
	fs.IntVar(&o.Ports.Postgres, "postgres-port", 0, "PostgreSQL server port (0: a free one)")
}

// deployFlags say what a deployment deploys, as what.
type deployFlags struct {
	Template  string // the SAM template
	StackName string // what ${AWS::StackName} resolves to
}

func bindDeploy(fs *pflag.FlagSet, d *deployFlags) {
	fs.StringVar(&d.Template, "template", "template.yaml", "the SAM template")
	fs.StringVar(&d.StackName, "stack-name", "fifoworker", "the stack name that ${AWS::StackName} resolves to")
}

// bindAllLocal binds every flag the verbs of local took before each had
// its own, for the flags a verb ignores (ignoreFlags).
func bindAllLocal(fs *pflag.FlagSet) {
	var o localstack.Options
	var d deployFlags
	bindStart(fs, &o)
	bindDeploy(fs, &d)
}

// localVerb makes the command of a local verb that takes no argument, with
// the stack's flags (named defaultName by default) and the ignored ones.
func (c *cli) localVerb(use, short, long string, v verb, o *localstack.Options, defaultName string, ignored ...string) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: noArgs, RunE: c.choose(v, nil)}
	bindStack(cmd.Flags(), o, defaultName)
	_ = cmd.MarkFlagDirname("cache")
	ignoreFlags(cmd, bindAllLocal, ignored...)
	return cmd
}

// markTemplate completes --template with YAML files.
func markTemplate(cmd *cobra.Command) {
	_ = cmd.MarkFlagFilename("template", "yaml", "yml")
}

// localUpOptions are `fifoworker local up`'s.
type localUpOptions struct{ Local localstack.Options }

func (c *cli) localUpCmd() *cobra.Command {
	o := &localUpOptions{}
	cmd := c.localVerb("up", "install (first use) and start the emulators; print the environment to eval",
		"Install the emulators (first use) and start them; print the stack's environment for a shell to eval.",
		o, &o.Local, "dev", "template", "stack-name")
	bindStart(cmd.Flags(), &o.Local)
	cmd.Example = `  eval "$(fifoworker local up)"`
	return cmd
}

func (o *localUpOptions) Validate() error { return nil }

func (o *localUpOptions) Run(ctx context.Context, c *cli) error {
	start := time.Now()
	opts := o.Local
	opts.Progress = c.stderr
	opts.Broker = brokerBinary
	s, err := localstack.Up(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "localstack: stack %s up in %v\n", s.Name, time.Since(start).Round(time.Millisecond))
	fmt.Fprint(c.stdout, s.Shell())
	return nil
}

// localDownOptions are `fifoworker local down`'s.
type localDownOptions struct{ Local localstack.Options }

func (c *cli) localDownCmd() *cobra.Command {
	o := &localDownOptions{}
	return c.localVerb("down", "stop the stack's processes and remove its state",
		"Stop exactly the processes the stack recorded, and remove its state (its env file included).",
		o, &o.Local, "dev", append(startFlags, "template", "stack-name")...)
}

func (o *localDownOptions) Validate() error { return nil }

func (o *localDownOptions) Run(context.Context, *cli) error { return localstack.Down(o.Local) }

// localStatusOptions are `fifoworker local status`'s.
type localStatusOptions struct{ Local localstack.Options }

func (c *cli) localStatusCmd() *cobra.Command {
	o := &localStatusOptions{}
	return c.localVerb("status", "show each emulator's PID, endpoint and whether it answers",
		"Show each emulator's PID, endpoint and whether it answers. Exit status 1 when one is not running or not answering.",
		o, &o.Local, "dev", append(startFlags, "template", "stack-name")...)
}

func (o *localStatusOptions) Validate() error { return nil }

func (o *localStatusOptions) Run(ctx context.Context, c *cli) error {
	s, statuses, err := localstack.Status(ctx, o.Local)
	if err != nil {
		return err
	}
	if s.External != "" {
		fmt.Fprintf(c.stdout, "stack %s uses AWS_ENDPOINT_URL=%s\n", s.Name, s.External)
	}
	var down error
	for _, st := range statuses {
		state := "ready"
		switch {
		case !st.Running:
			state, down = "not running", exitStatus(1)
		case st.Err != nil:
			state, down = "not answering: "+st.Err.Error(), exitStatus(1)
		}
		fmt.Fprintf(c.stdout, "%-9s pid %-7d %-24s %s\n", st.Service, st.PID, st.Endpoint, state)
	}
	return down
}

// localEnvOptions are `fifoworker local env`'s.
type localEnvOptions struct{ Local localstack.Options }

func (c *cli) localEnvCmd() *cobra.Command {
	o := &localEnvOptions{}
	return c.localVerb("env", "print the environment of the running stack",
		"Print the environment of the running stack, for a shell to eval.",
		o, &o.Local, "dev", append(startFlags, "template", "stack-name")...)
}

func (o *localEnvOptions) Validate() error { return nil }

func (o *localEnvOptions) Run(_ context.Context, c *cli) error {
	s, err := localstack.Load(o.Local)
	if err != nil {
		return err
	}
	fmt.Fprint(c.stdout, s.Shell())
	return nil
}

// localDeployOptions are `fifoworker local deploy`'s.
type localDeployOptions struct {
	Local  localstack.Options
	Deploy deployFlags
}

func (c *cli) localDeployCmd() *cobra.Command {
	o := &localDeployOptions{}
	cmd := c.localVerb("deploy", "create the queues, tables and buckets that template.yaml declares",
		`Create the queues, tables and buckets that the template declares on the running stack;
print the outputs as FIFOWORKER_* variables to eval, and write the stack's env file (the
operator's --stack reads it). The env file of a "local serve" still running on the stack
is kept, with its tokens and FIFOWORKER_API_URL.`,
		o, &o.Local, "dev", startFlags...)
	bindDeploy(cmd.Flags(), &o.Deploy)
	markTemplate(cmd)
	cmd.Example = `  eval "$(fifoworker local deploy)"`
	return cmd
}

func (o *localDeployOptions) Validate() error { return nil }

func (o *localDeployOptions) Run(ctx context.Context, c *cli) error {
	s, err := localstack.Load(o.Local)
	if err != nil {
		return err
	}
	envFile, err := localstack.EnvFile(o.Local)
	if err != nil {
		return err
	}
	return deploy(ctx, s, o.Deploy, envFile, c.stdout, c.stderr)
}

// localRunOptions are `fifoworker local run`'s.
type localRunOptions struct {
	Local   localstack.Options
	Deploy  deployFlags
	Command []string // the command and its arguments
}

func (c *cli) localRunCmd() *cobra.Command {
	o := &localRunOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- command [args...]",
		Short: "start a fresh stack, deploy, run a command in its environment, stop the stack",
		Long: `Start a fresh stack, deploy the template on it, run the command in the stack's
environment, and stop the stack whatever happens (SIGINT and SIGTERM included). A stack
of that name that is already running is refused.

Exit status: the command's own; 1 when the stack did not start or deploy (nothing was
run), 2 a usage error.`,
		Example: `  fifoworker local run --name test -- go test -tags integration ./...`,
		Args:    cobra.ArbitraryArgs,
		// The command's arguments are its own: the flags end at the first
		// argument that is not one, as they always did.
		Annotations: map[string]string{commandAnnotation: ""},
		RunE:        c.choose(o, func(args []string) { o.Command = args }),
	}
	cmd.Flags().SetInterspersed(false)
	bindStack(cmd.Flags(), &o.Local, "dev")
	bindStart(cmd.Flags(), &o.Local)
	bindDeploy(cmd.Flags(), &o.Deploy)
	markTemplate(cmd)
	return cmd
}

func (o *localRunOptions) Validate() error {
	if len(o.Command) == 0 {
		return errors.New("it needs a command to run, after --")
	}
	return nil
}

// Run runs the command in the environment of a fresh stack.
func (o *localRunOptions) Run(ctx context.Context, c *cli) error {
	return withFreshStack(ctx, o.Local, o.Deploy, nil, c.stderr, func(ctx context.Context, s *localstack.State, _ *samtemplate.Template, _ *localdeploy.Result) error {
		cmd := exec.CommandContext(ctx, o.Command[0], o.Command[1:]...)
		cmd.Env = append(os.Environ(), s.Env()...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, c.stdout, c.stderr
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 30 * time.Second
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exitStatus(exit.ExitCode())
		}
		return err
	})
}

// withFreshStack starts a stack that is not running yet, deploys the
// template on it, calls fn, and stops the stack whatever happens, SIGINT and
// SIGTERM included (the emulators run in their own process groups, so
// without this they would outlive the CLI). A stack of that name that is
// already running is refused: stopping it afterwards would take it away from
// whoever started it.
// prepare, when set, adjusts the template before it is deployed.
func withFreshStack(ctx context.Context, o localstack.Options, d deployFlags, prepare func(*samtemplate.Template), stderr io.Writer,
	fn func(ctx context.Context, s *localstack.State, tpl *samtemplate.Template, res *localdeploy.Result) error) error {
	if running, err := localstack.Load(o); err == nil {
		return fmt.Errorf("stack %q is already running (started %s); this needs a fresh one: use another --name, or stop it",
			running.Name, running.StartedAt.Format(time.RFC3339))
	}
	tpl, err := samtemplate.Load(d.Template)
	if err != nil {
		return err
	}
	if prepare != nil {
		prepare(tpl)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	o.Progress = stderr
	o.Broker = brokerBinary
	s, err := localstack.Up(ctx, o)
	defer func() {
		if err := localstack.Down(o); err != nil {
			fmt.Fprintln(stderr, "fifoworker: stopping the stack:", err)
		}
	}()
	if err != nil {
		return fmt.Errorf("the local stack did not start, so nothing was run: %w", err)
	}
	fmt.Fprintf(stderr, "localstack: stack %s up in %v\n", s.Name, time.Since(start).Round(time.Millisecond))
	res, err := deployTemplate(ctx, s, tpl, d, stderr)
	if err != nil {
		return err
	}
	return fn(ctx, s, tpl, res)
}
