// Command fifoworker is the developer and operator CLI: the local AWS stack,
// the demo, and the operator's commands: jobs, quarantine and sweep.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

const usage = `usage: fifoworker <command>

commands:
  demo        run the whole pipeline on sample jobs on the local AWS stack (exit 0 only
              when every invariant held)
  local       the local AWS stack: up, down, status, env, deploy, run, serve (the jobs API over HTTP)
  help        show this text

operator's commands, for a local stack or a deployment (fifoworker <command> help):
  jobs        get, list and cancel jobs
  quarantine  the groups held on a queue: list, show, redrive, discard
  sweep       one run of the sweeper (--dry-run: report, change nothing)

  Where they work:
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
  A flag naming a resource wins either way. Exit status: 0 done, 1 failed,
  2 a usage error; each command's help says which failures are which.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return runWith(args, defaultOpsEnv(), stdout, stderr)
}

// runWith is run with the operator's commands finding their resources in
// env (the tests give their own).
func runWith(args []string, env opsEnv, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "demo":
		return runDemo(context.Background(), args[1:], stdout, stderr)
	case "local":
		return local(context.Background(), args[1:], stdout, stderr)
	case "jobs":
		return jobsCmd(context.Background(), args[1:], env, stdout, stderr)
	case "quarantine":
		return quarantineCmd(context.Background(), args[1:], env, stdout, stderr)
	case "sweep":
		return sweepCmd(context.Background(), args[1:], env, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "fifoworker: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
