// Command fifoworker is the developer and operator CLI: the local AWS stack,
// the demo, and (as they land) job inspection, DLQ redrive and sweeping.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
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
		return demo(stdout)
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

// demo describes the pipeline until the pieces it runs have landed.
func demo(stdout io.Writer) int {
	fmt.Fprint(stdout, `fifoworker demo — coming with the pipeline issue. When it lands, it will:
  1. start the local AWS stack (DynamoDB Local, the SQS and S3 emulators) on 127.0.0.1,
     installing the pinned emulators on first use;
  2. create the queues, table and bucket that template.yaml declares;
  3. submit export-intent-7 and other sample intents, creating job-42 and friends;
  4. run the relay, worker and projector through the local event source mapping,
     including a worker that stalls past its lease so that a second one takes over
     (generation 2 wins, generation 1's late accept changes nothing);
  5. print each job's history, its accepted candidate and the orphans left to sweep.
What exists today: pkg/fifo, the ordered-lanes SQS batch processor (make test, make bench).
`)
	return 0
}
