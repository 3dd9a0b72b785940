package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/logging"
	"github.com/spf13/pflag"

	"github.com/fifoworker/fifoworker/internal/base/sdkhttp"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// serveStack is the stack `fifoworker local serve` starts unless --name
// says otherwise: the operator's commands' default stack.
const serveStack = "serve"

// opsOutputs are the template's outputs the operator's commands read, as
// FIFOWORKER_* variables. An environment that sets none of them names no
// resource.
var opsOutputs = []string{
	"JobsTableName", "ViewsTableName", "TotalsTableName", "QuarantineTableName",
	"CandidatesBucketName", "CommandsQueueUrl", "EventsQueueUrl",
	"CommandsTopic", "EventsTopic", // template-kafka.yaml's
}

// bindStackFlag binds --stack, a flag of every operator's command.
func bindStackFlag(fs *pflag.FlagSet, stack *string) {
	fs.StringVar(stack, "stack", "", "a local stack named `NAME`: its env file gives the endpoints and the resources (see fifoworker --help)")
}

// readStack reads the env file of local stack name (localstack.EnvFile),
// which `local serve` and `local deploy` write, if the stack runs with the
// file's endpoints (localstack.ReadStackEnv).
func readStack(name string) (map[string]string, string, error) {
	return localstack.ReadStackEnv(localstack.Options{Name: name})
}

// errStackName marks a --stack value no stack can have: a usage error.
var errStackName = errors.New("not a stack name")

// target is where an operator command works, from its --stack (stack) and
// the environment:
//   - --stack NAME: the env file of local stack NAME gives the AWS
//     configuration (read as a function reads its environment:
//     startup.Env.AWSConfig, no profile, no shared file) and the FIFOWORKER_*
//     names of the resources; the process environment is read only for
//     credentials the file lacks (withCredentials).
//   - no --stack, and the environment names a resource (an opsOutputs
//     variable): the environment, with the SDK's standard configuration.
//   - no --stack and no resource named: the serve stack's env file if it
//     has one (saying so on stderr), else the environment.
//
// An env file whose stack is not running, or has other endpoints now
// (localstack.ErrStaleEnvFile), is never used: --stack fails with a usage
// error, and the default is skipped with a notice on stderr.
//
// The clients it opens log through log.
func (e opsEnv) target(stack string, log *slog.Logger, stderr io.Writer) (opsEnv, error) {
	if stack == "" && (e.namesResources() || e.stacks == nil) {
		return e.connected(nil, "", log), nil
	}
	if stack != "" {
		if err := localstack.CheckName(stack); err != nil {
			return e, fmt.Errorf("--stack: %w: %w", errStackName, err)
		}
	}
	name := stack
	if name == "" {
		name = serveStack
	}
	if e.stacks == nil {
		return e, fmt.Errorf("stack %q has no env file", name)
	}
	vars, path, err := e.stacks(name)
	switch {
	case err == nil:
	case stack == "" && errors.Is(err, os.ErrNotExist):
		return e.connected(nil, "", log), nil // no serve stack: the environment, as before
	case stack == "" && errors.Is(err, localstack.ErrStaleEnvFile):
		fmt.Fprintf(stderr, "fifoworker: not using local stack %q: %v\n", name, err)
		return e.connected(nil, "", log), nil
	case errors.Is(err, localstack.ErrStaleEnvFile):
		return e, fmt.Errorf("--stack: %w", err) // a usage error: the name is the operator's
	case errors.Is(err, os.ErrNotExist):
		return e, fmt.Errorf("stack %q has no env file (%w): `fifoworker local serve --name %s` writes it while it runs, and `fifoworker local deploy --name %s` for a stack it deploys on",
			name, err, name, name)
	default:
		return e, err
	}
	if vars, err = withCredentials(vars, name, e.getenv); err != nil {
		return e, err
	}
	if stack == "" {
		fmt.Fprintf(stderr, "fifoworker: using local stack %q (its env file %s): the environment names no resource; --stack NAME picks another\n", name, path)
	}
	e.getenv = func(k string) string { return vars[k] }
	return e.connected(vars, fmt.Sprintf("the env file of stack %s (%s)", name, path), log), nil
}

// credentialVars are the credentials an SDK reads from the environment.
var credentialVars = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}

// withCredentials is the variables of stack name's env file, with the
// environment's (getenv) credentials when the file has none. The file of a
// stack started against AWS_ENDPOINT_URL (LocalStack) holds none on
// purpose: the caller's credentials choose LocalStack's account, and may
// be real ones, which a file must not keep (localstack's State.Env).
func withCredentials(vars map[string]string, name string, getenv func(string) string) (map[string]string, error) {
	if vars["AWS_ACCESS_KEY_ID"] != "" || vars["AWS_SECRET_ACCESS_KEY"] != "" {
		return vars, nil
	}
	if getenv("AWS_ACCESS_KEY_ID") == "" || getenv("AWS_SECRET_ACCESS_KEY") == "" {
		return nil, fmt.Errorf("the env file of stack %q holds no credentials and neither does the environment: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (an emulator such as LocalStack takes any, e.g. test and test)", name)
	}
	vars = maps.Clone(vars)
	for _, k := range credentialVars {
		if v := getenv(k); v != "" {
			vars[k] = v
		}
	}
	return vars, nil
}

// targetOf is target, its error a usage error (exit status 2) for a
// --stack no stack can have or whose env file is stale.
func (e opsEnv) targetOf(stack string, log *slog.Logger, stderr io.Writer) (opsEnv, error) {
	t, err := e.target(stack, log, stderr)
	if errors.Is(err, errStackName) || errors.Is(err, localstack.ErrStaleEnvFile) {
		return e, usageError(err)
	}
	return t, err
}

// namesResources reports whether the environment names one of the
// resources the operator's commands work on.
func (e opsEnv) namesResources() bool {
	for _, o := range opsOutputs {
		if e.getenv(outputVar(o)) != "" {
			return true
		}
	}
	return false
}

// connected is e opening its clients with vars (nil: the process
// environment), the names coming from origin ("": the environment).
func (e opsEnv) connected(vars map[string]string, origin string, log *slog.Logger) opsEnv {
	e.origin = origin
	if e.connect != nil {
		e.open = e.connect(vars, log)
	}
	return e
}

// connectAWS is the operator's commands' opener of the real resources.
func connectAWS(vars map[string]string, log *slog.Logger) opener {
	return awsOpener{load: func(ctx context.Context) (aws.Config, error) { return awsConfig(ctx, vars, log) }}
}

// awsConfig is the SDK configuration of the operator's commands: a local
// stack's variables read as a function reads its environment, or (vars
// nil) the SDK's standard configuration. Either way the SDK logs through
// log, and its clients guard their request bodies (package sdkhttp).
func awsConfig(ctx context.Context, vars map[string]string, log *slog.Logger) (aws.Config, error) {
	var cfg aws.Config
	if vars != nil {
		env := startup.NewEnvFrom(vars)
		cfg = env.AWSConfig() // its HTTP client is guarded already
		if err := env.Err(); err != nil {
			return aws.Config{}, fmt.Errorf("the stack's env file: %w", err)
		}
	} else {
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return aws.Config{}, err
		}
		cfg.HTTPClient = sdkhttp.GuardRequestBodies(cfg.HTTPClient)
	}
	cfg.Logger = sdkLogger{log: log}
	return cfg, nil
}

// cliLogger is the operator's commands' logger: text lines on stderr,
// without the time (a terminal shows them as they come), warnings and
// errors only unless verbose.
func cliLogger(stderr io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// sdkLogger hands the SDK's log lines to the CLI's logger, marked
// source=aws-sdk: a warning at WARN, the rest at DEBUG. (The SDK's own
// default writes "SDK <time> WARN ..." on stderr, past the CLI's format
// and level.)
type sdkLogger struct{ log *slog.Logger }

var _ logging.Logger = sdkLogger{}

func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, fmt.Sprintf(format, v...), slog.String("source", "aws-sdk"))
}
