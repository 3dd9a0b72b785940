// Command fifoworker is the developer and operator CLI: the local AWS stack,
// the demo, and (as they land) job inspection, DLQ redrive and sweeping.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/fifoworker/fifoworker/internal/localstack"
)

const usage = `usage: fifoworker <command>

commands:
  demo    run the whole pipeline on sample jobs on the local AWS stack
  local   the local AWS stack: up, down, status, env, deploy, run
  help    show this text
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "demo":
		return demo(context.Background(), stdout, stderr)
	case "local":
		return local(context.Background(), args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "fifoworker: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

// demo runs what exists of the pipeline on the local stack and says what
// is still to come.
func demo(ctx context.Context, stdout, stderr io.Writer) int {
	fmt.Fprint(stdout, `fifoworker demo: the pipeline lands with a later issue. When it does, this will:
  1. start the local AWS stack and create what template.yaml declares   (works today, below)
  2. submit export-intent-7 and other sample intents, creating job-42 and friends;
  3. run the relay, worker and projector through the local event source mapping,
     including a worker that stalls past its lease so that a second one takes over
     (generation 2 wins, generation 1's late accept changes nothing);
  4. print each job's history, its accepted candidate and the orphans left to sweep.

`)
	o := localstack.Options{Name: "demo", Progress: stderr}
	return withFreshStack(ctx, o, "template.yaml", "fifoworker", stdout, stderr, func(context.Context, *localstack.State) int {
		fmt.Fprintln(stdout, "\nStep 1 done: the stack above is up and template.yaml is deployed on it; it is stopped again now.")
		fmt.Fprintln(stdout, "For a stack that stays up: eval \"$(go run ./cmd/fifoworker local up)\"")
		return 0
	})
}
