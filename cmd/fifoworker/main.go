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
  local   the local AWS stack: up, down, status, env, deploy, run, serve (the jobs API over HTTP)
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
		return runDemo(context.Background(), args[1:], stdout, stderr)
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
