package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

const localUsage = `usage: fifoworker local <up|down|status|env|deploy|run|serve> [flags]

  up       install (first use) and start the emulators; print the environment to eval
  down     stop the stack's processes and remove its state
  status   show each emulator's PID, endpoint and whether it answers
  env      print the environment of the running stack
  deploy   create the queues, tables and buckets that template.yaml declares; print the
           outputs to eval, and write the stack's env file (the operator's --stack reads it)
  run      start a fresh stack, deploy, run a command in its environment, stop the stack
  serve    start a fresh stack (--name serve), deploy, run the five functions with their
           event source mappings, and serve the jobs API on --addr (127.0.0.1:8080) until
           SIGINT/SIGTERM; then stop everything. It prints the stack's environment to eval
           (endpoints, FIFOWORKER_* names, local tokens) and writes it to the stack's env
           file, which the operator's commands read by default (--stack serve)

Exit status: 0 done, 1 failed (the stack did not start or deploy; status: an
emulator not running or not answering), 2 a usage error; run: the command's own
exit status.

examples:
  eval "$(fifoworker local up)"
  fifoworker local run --name test -- go test -tags integration ./...
  fifoworker local serve --worker-timeout 10
`

func local(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, localUsage)
		return 2
	}
	fs := flag.NewFlagSet("local "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o localstack.Options
	defaultName := "dev"
	if args[0] == "serve" {
		defaultName = "serve"
	}
	fs.StringVar(&o.Name, "name", defaultName, "stack name (state, ports and logs are per name)")
	fs.StringVar(&o.CacheDir, "cache", localstack.DefaultCacheDir(), "where tools and stack state live")
	fs.StringVar(&o.Region, "region", "eu-west-1", "AWS region the stack reports")
	fs.IntVar(&o.Ports.SQS, "sqs-port", 0, "SQS emulator port (0: a free one)")
	fs.IntVar(&o.Ports.DynamoDB, "dynamodb-port", 0, "DynamoDB Local port (0: a free one)")
	fs.IntVar(&o.Ports.S3, "s3-port", 0, "S3 emulator port (0: a free one)")
	template := fs.String("template", "template.yaml", "deploy, run, serve: the SAM template")
	stackName := fs.String("stack-name", "fifoworker", "deploy, run: the stack name that ${AWS::StackName} resolves to")
	var sf serveFlags
	if args[0] == "serve" {
		fs.StringVar(&sf.addr, "addr", "127.0.0.1:8080", "serve: where the jobs API listens (a loopback address only)")
		fs.BoolVar(&sf.rie, "rie", false, "serve: run the built bootstraps under the runtime interface emulator")
		fs.IntVar(&sf.workerTimeout, "worker-timeout", 0, "serve: the worker's timeout in seconds, one of the template's WorkerTimeout values (the commands visibility is 6 times it); 0: the template's default")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	o.Progress = stderr

	fail := func(err error) int {
		fmt.Fprintln(stderr, "fifoworker:", err)
		return 1
	}
	switch args[0] {
	case "up":
		start := time.Now()
		s, err := localstack.Up(ctx, o)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stderr, "localstack: stack %s up in %v\n", s.Name, time.Since(start).Round(time.Millisecond))
		fmt.Fprint(stdout, s.Shell())
	case "down":
		if err := localstack.Down(o); err != nil {
			return fail(err)
		}
	case "env":
		s, err := localstack.Load(o)
		if err != nil {
			return fail(err)
		}
		fmt.Fprint(stdout, s.Shell())
	case "status":
		s, statuses, err := localstack.Status(ctx, o)
		if err != nil {
			return fail(err)
		}
		if s.External != "" {
			fmt.Fprintf(stdout, "stack %s uses AWS_ENDPOINT_URL=%s\n", s.Name, s.External)
			return 0
		}
		code := 0
		for _, st := range statuses {
			state := "ready"
			switch {
			case !st.Running:
				state, code = "not running", 1
			case st.Err != nil:
				state, code = "not answering: "+st.Err.Error(), 1
			}
			fmt.Fprintf(stdout, "%-9s pid %-7d %-24s %s\n", st.Service, st.PID, st.Endpoint, state)
		}
		return code
	case "deploy":
		s, err := localstack.Load(o)
		if err != nil {
			return fail(err)
		}
		envFile, err := localstack.EnvFile(o)
		if err != nil {
			return fail(err)
		}
		return deploy(ctx, s, *template, *stackName, envFile, stdout, stderr)
	case "run":
		return runWithStack(ctx, o, *template, *stackName, fs.Args(), stdout, stderr)
	case "serve":
		return localServe(ctx, o, *template, *stackName, sf, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "fifoworker: unknown local command %q\n\n%s", args[0], localUsage)
		return 2
	}
	return 0
}

// withFreshStack starts a stack that is not running yet, deploys the
// template on it, calls fn, and stops the stack whatever happens, SIGINT and
// SIGTERM included (the emulators run in their own process groups, so
// without this they would outlive the CLI). A stack of that name that is
// already running is refused: stopping it afterwards would take it away from
// whoever started it.
// prepare, when set, adjusts the template before it is deployed.
func withFreshStack(ctx context.Context, o localstack.Options, templatePath string, prepare func(*samtemplate.Template), stackName string, stderr io.Writer,
	fn func(ctx context.Context, s *localstack.State, tpl *samtemplate.Template, res *localdeploy.Result) int) int {
	if running, err := localstack.Load(o); err == nil {
		fmt.Fprintf(stderr, "fifoworker: stack %q is already running (started %s); this needs a fresh one: use another --name, or stop it\n",
			running.Name, running.StartedAt.Format(time.RFC3339))
		return 1
	}
	tpl, err := samtemplate.Load(templatePath)
	if err != nil {
		fmt.Fprintln(stderr, "fifoworker:", err)
		return 1
	}
	if prepare != nil {
		prepare(tpl)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	s, err := localstack.Up(ctx, o)
	defer func() {
		if err := localstack.Down(o); err != nil {
			fmt.Fprintln(stderr, "fifoworker: stopping the stack:", err)
		}
	}()
	if err != nil {
		fmt.Fprintln(stderr, "fifoworker: the local stack did not start, so nothing was run:", err)
		return 1
	}
	fmt.Fprintf(stderr, "localstack: stack %s up in %v\n", s.Name, time.Since(start).Round(time.Millisecond))
	res, err := deployTemplate(ctx, s, tpl, templatePath, stackName, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "fifoworker:", err)
		return 1
	}
	return fn(ctx, s, tpl, res)
}

// runWithStack runs a command in the environment of a fresh stack.
func runWithStack(ctx context.Context, o localstack.Options, template, stackName string, argv []string, stdout, stderr io.Writer) int {
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "fifoworker: local run needs a command after --")
		return 2
	}
	return withFreshStack(ctx, o, template, nil, stackName, stderr, func(ctx context.Context, s *localstack.State, _ *samtemplate.Template, _ *localdeploy.Result) int {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), s.Env()...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, stdout, stderr
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 30 * time.Second
		if err := cmd.Run(); err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) && exit.ExitCode() > 0 {
				return exit.ExitCode()
			}
			fmt.Fprintln(stderr, "fifoworker:", err)
			return 1
		}
		return 0
	})
}
