// Command fifoworker is the developer and operator CLI: the local AWS stack,
// the demo, and the operator's commands: jobs, quarantine, sweep and console.
//
// Each verb is an options struct with its own flags, Validate and Run
// (verb.go), on cobra, which gives every command its help and the shell
// completion (fifoworker completion bash|zsh|fish|powershell).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const rootLong = `fifoworker is the CLI of the fifoworker service: the local AWS stack and the demo
for development, and the operator's commands for a local stack or a deployment.

Where the operator's commands (jobs, quarantine, sweep, console) work:
  --stack NAME  a local stack: its env file, which "fifoworker local serve"
                and "fifoworker local deploy" write, gives the endpoints,
                credentials, region and resources; nothing else is read,
                but for the credentials of a stack on AWS_ENDPOINT_URL
                (LocalStack), whose file has none: the environment's. A
                file whose stack is not running is never used (exit 2).
  otherwise     the AWS SDK's standard configuration (AWS_PROFILE, AWS_REGION;
                AWS_ENDPOINT_URL for a local stack), and the tables, queues
                and bucket in flags or in FIFOWORKER_* variables (for a
                deployment, export them from the stack's outputs). When no
                FIFOWORKER_* variable names one and the "serve" stack has an
                env file of the running stack, they use it as --stack serve
                would, and say so.
A flag naming a resource wins either way.

Exit status: 0 done, 1 failed, 2 a usage error; each command's help says
which failures are which.`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return runWith(args, defaultOpsEnv(), stdout, stderr)
}

// runWith is run with the operator's commands finding their resources in
// env (the tests give their own).
func runWith(args []string, env opsEnv, stdout, stderr io.Writer) int {
	return execute(args, &cli{env: env, stdout: stdout, stderr: stderr})
}

// execute runs the command args names and returns its exit status, having
// said on stderr why it failed, if it did. Parsing chooses the verb to
// run, then execute runs it: the tests parse as execute does.
func execute(args []string, c *cli) int {
	cmd, err := c.parse(args)
	if err == nil && c.chosen != nil {
		err = c.runChosen(context.Background())
	}
	return c.exit(cmd, err)
}

// parse parses args with the command tree and returns the command they
// name and the error that ends the command line there. Help, completion
// and a group's usage are done by then; a verb is only chosen (c.chosen).
func (c *cli) parse(args []string) (*cobra.Command, error) {
	c.chosen = nil
	root := c.root()
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		plainUsages(root)
	}
	root.SetArgs(oneDashFlags(root, args))
	return root.ExecuteC()
}

// plainUsages drops from the usage of every flag under cmd the backquotes
// that name the flag's value in the help (pflag's convention: "--limit N
// at most N jobs"), for a shell's completion, which shows a usage as it
// is written.
func plainUsages(cmd *cobra.Command) {
	plain := func(f *pflag.Flag) { _, f.Usage = pflag.UnquoteUsage(f) }
	cmd.Flags().VisitAll(plain)
	cmd.PersistentFlags().VisitAll(plain)
	for _, sub := range cmd.Commands() {
		plainUsages(sub)
	}
}

// exit says on stderr why cmd failed with err, if it did, and returns its
// exit status.
func (c *cli) exit(cmd *cobra.Command, err error) int {
	var e *exitError
	isExit := errors.As(err, &e)
	if err != nil && (!isExit || e.err != nil) {
		fmt.Fprintf(c.stderr, "%s: %v\n", cmd.CommandPath(), err)
	}
	if err != nil && !isExit {
		fmt.Fprintf(c.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return exitCode(err)
}

// root is the command tree, its verbs running with c.
func (c *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "fifoworker",
		Short: "the local AWS stack, the demo, and the operator's commands",
		Long:  rootLong,
		Args:  nil, // an argument that is no command: unknown command
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(cmd.ErrOrStderr(), cmd.UsageString())
			return exitStatus(2)
		},
		SilenceErrors: true, // execute says them
		SilenceUsage:  true,
	}
	// A command that holds verbs runs only to refuse what is not one: its
	// usage shows the verbs, not a line of its own.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "Usage:{{if .Runnable}}", "Usage:{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetIn(c.env.stdin)
	root.SetFlagErrorFunc(flagError)
	root.AddGroup(
		&cobra.Group{ID: "dev", Title: "Development:"},
		&cobra.Group{ID: "ops", Title: "Operating (a local stack or a deployment):"},
	)
	for _, sub := range []*cobra.Command{c.demoCmd(), c.localCmd(), c.capacityCmd()} {
		sub.GroupID = "dev"
		root.AddCommand(sub)
	}
	for _, sub := range []*cobra.Command{c.jobsCmd(), c.quarantineCmd(), c.sweepCmd(), c.consoleCmd()} {
		sub.GroupID = "ops"
		root.AddCommand(sub)
	}
	// cobra's completion command, which holds a verb for each shell, would
	// print its help and exit 0 alone or with an unknown shell: it is a
	// group as the others are.
	root.InitDefaultCompletionCmd()
	for _, sub := range root.Commands() {
		if sub.Name() == "completion" {
			asGroup(sub)
		}
	}
	return root
}
