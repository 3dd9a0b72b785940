package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// serveTenants are the tenants `local serve` seeds articles for and prints
// a token for, with their token's variable name.
var serveTenants = []struct {
	tenant, tokenVar string
	articles         int
}{
	{"t-1", "TOKEN_T1", 120},
	{"t-2", "TOKEN_T2", 40},
}

// serveFlags are the flags of `local serve` beyond the stack's.
type serveFlags struct {
	addr          string
	rie           bool
	workerTimeout int
}

// localServe is `fifoworker local serve`: what `sam local start-api`
// gives, plus the event source mappings sam local lacks. It listens first
// (a refused or busy address costs no stack), then starts a fresh stack,
// deploys the template and serves until SIGINT or SIGTERM, after which it
// stops the server, the mappings, the emulators and the stack.
func localServe(ctx context.Context, o localstack.Options, templatePath, stackName string, f serveFlags, stdout, stderr io.Writer) int {
	var prepare func(*samtemplate.Template)
	if f.workerTimeout != 0 {
		// The template's WorkerTimeout takes the values its mapping has a
		// commands visibility for: checked before any stack starts.
		if err := checkWorkerTimeout(templatePath, f.workerTimeout); err != nil {
			fmt.Fprintf(stderr, "fifoworker: --worker-timeout %d: %v\n", f.workerTimeout, err)
			return 2
		}
		prepare = func(tpl *samtemplate.Template) { demo.SetWorkerTimeout(tpl, f.workerTimeout) }
	}
	ln, err := pipeline.ListenLoopback(f.addr)
	if err != nil {
		fmt.Fprintln(stderr, "fifoworker: --addr:", err)
		if errors.Is(err, pipeline.ErrNotLoopback) {
			return 2
		}
		return 1
	}
	defer func() { _ = ln.Close() }()
	return withFreshStack(ctx, o, templatePath, prepare, stackName, stderr, func(ctx context.Context, s *localstack.State, tpl *samtemplate.Template, res *localdeploy.Result) int {
		root, _ := os.Getwd()
		envFile, err := localstack.EnvFile(o)
		if err != nil {
			fmt.Fprintln(stderr, "fifoworker: local serve:", err)
			return 1
		}
		err = serve(ctx, serveOptions{
			State: s, Template: tpl, Deployed: res, StackName: stackName, Listener: ln, RIE: f.rie,
			Root: root, LogDir: filepath.Join(o.CacheDir, "serve-logs", o.Name), Out: stdout, EnvFile: envFile,
		})
		if err != nil {
			fmt.Fprintln(stderr, "fifoworker: local serve:", err)
			return 1
		}
		return 0
	})
}

// serveOptions say what serve serves and where: a deployed stack (its own,
// or the test stack) and a listener.
type serveOptions struct {
	State     *localstack.State
	Template  *samtemplate.Template
	Deployed  *localdeploy.Result
	StackName string
	Listener  net.Listener // serve closes it
	RIE       bool         // the built bootstraps under the runtime interface emulator
	Root      string       // the module's root, to build bootstraps from
	LogDir    string       // functions.log, RIE logs and bootstraps
	Out       io.Writer    // the environment to eval, how to call the API, one line per request
	// EnvFile is where the stack's environment is written as well
	// (localstack.EnvFile of the stack; "": nowhere), for a shell to source
	// and for the operator's commands' --stack.
	EnvFile string
	// Setenv sets a variable of this process for the in-process functions'
	// SDK configuration (default os.Setenv; tests pass t.Setenv).
	Setenv func(key, value string)
}

// serveEnv is the block of shell lines serve prints and writes to the
// stack's env file: the stack's endpoints, region and credentials, the
// deployment's outputs as FIFOWORKER_* variables with the API's URL as
// FIFOWORKER_API_URL (the ApiUrl output of a deployment), and a token per
// tenant.
func serveEnv(s *localstack.State, outputs map[string]string, apiURL string, id *pipeline.Identity) (string, error) {
	withAPI := maps.Clone(outputs)
	withAPI["ApiUrl"] = apiURL
	var b strings.Builder
	for _, kv := range stackEnv(s, withAPI) {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString(localstack.ShellExport(k, v) + "\n")
	}
	fmt.Fprintf(&b, "# tokens (HS256 with a key made for this run; iss %s, aud %s, claim %q; valid %v):\n",
		pipeline.LocalIssuer, pipeline.LocalAudience, id.TenantClaim(), pipeline.LocalTokenTTL)
	for _, t := range serveTenants {
		tok, err := id.Token(t.tenant)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s   # tenant %s\n", localstack.ShellExport(t.tokenVar, tok), t.tenant)
	}
	return b.String(), nil
}

// serve seeds articles, runs the pipeline and serves its HTTP API on
// o.Listener until ctx ends; then it stops the server (letting requests in
// flight finish), the mappings and the emulators. The stack is the
// caller's.
func serve(ctx context.Context, o serveOptions) (err error) {
	defer func() { _ = o.Listener.Close() }()
	if o.Setenv == nil {
		o.Setenv = func(k, v string) { _ = os.Setenv(k, v) }
	}
	say := func(format string, args ...any) { fmt.Fprintf(o.Out, format+"\n", args...) }
	for _, kv := range o.State.Env() {
		k, v, _ := strings.Cut(kv, "=")
		o.Setenv(k, v)
	}
	counts := map[string]int{}
	var seeded []string
	for _, t := range serveTenants {
		counts[t.tenant] = t.articles
		seeded = append(seeded, fmt.Sprintf("%s %d", t.tenant, t.articles))
	}
	if err := demo.SeedArticles(ctx, o.State.DynamoDBClient(), o.Deployed.Resources["ArticlesTable"], counts); err != nil {
		return err
	}
	say("seeded articles to export: %s", strings.Join(seeded, ", "))

	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(o.LogDir, "functions.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	cfg := pipeline.Config{
		Template: o.Template, Deployed: o.Deployed, StackName: o.StackName, Region: o.State.Region,
		Endpoints: o.State.Env(), LogDir: o.LogDir, Logger: slog.New(slog.NewJSONHandler(logFile, nil)),
	}
	mode, logs := "in process", logPath
	if o.RIE {
		mode = "each bootstrap under its runtime interface emulator"
		logs = filepath.Join(o.LogDir, "<function>.rie.log") + "; the mappings': " + logPath
		cfg.Mode, cfg.RIE = pipeline.UnderRIE, o.State.RIE
		say("building the five bootstraps (CGO_ENABLED=0, -tags lambda.norpc, stripped) ...")
		if cfg.Bootstraps, err = pipeline.BuildBootstraps(ctx, o.Root, filepath.Join(o.LogDir, "bootstraps"), ""); err != nil {
			return err
		}
	}
	p, err := pipeline.Build(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := p.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
	}()
	id, err := pipeline.NewIdentity(p.Setting("intake", "TENANT_CLAIM"), nil)
	if err != nil {
		return err
	}
	p.Run(ctx)

	base := "http://" + o.Listener.Addr().String()
	say("the jobs API: %s (intake, relay, worker, projector, sweeper %s; their log: %s)", base, mode, logs)
	say("event source mappings: Jobs stream → relay → commands.fifo → worker, events.fifo → projector")
	block, err := serveEnv(o.State, o.Deployed.Outputs, base, id)
	if err != nil {
		return err
	}
	if o.EnvFile != "" {
		if err := localstack.WriteEnvFile(o.EnvFile, block); err != nil {
			return err
		}
		byDefault := ""
		if o.State.Name == serveStack {
			byDefault = ", and by default"
		}
		say("the stack's environment, to eval in another shell (or: . %s); the operator's commands read that file with --stack %s%s:",
			o.EnvFile, o.State.Name, byDefault)
	} else {
		say("the stack's environment, to eval in another shell:")
	}
	fmt.Fprint(o.Out, block)
	say("try:")
	say(`  curl -H "Authorization: Bearer $TOKEN_T1" -H 'Idempotency-Key: k1' -H 'Content-Type: application/json' -d '{"spec":{}}' %s/jobs`, base)
	say(`  curl -H "Authorization: Bearer $TOKEN_T1" %s/jobs/<job_id>`, base)
	say("SIGINT (Ctrl-C) or SIGTERM stops the server, the mappings, the emulators and the stack.")

	srv := &http.Server{
		Handler:           pipeline.NewHTTPAPI(p.HTTP, id, slog.New(slog.NewTextHandler(o.Out, nil))),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(o.Listener) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	say("stopping: the server (requests in flight finish), then the mappings and the emulators")
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("stop the server: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// checkWorkerTimeout refuses a worker timeout the template's WorkerTimeout
// parameter does not allow.
func checkWorkerTimeout(templatePath string, seconds int) error {
	tpl, err := samtemplate.Load(templatePath)
	if err != nil {
		return err
	}
	p, ok := tpl.Parameters["WorkerTimeout"]
	if !ok {
		return fmt.Errorf("%s has no WorkerTimeout parameter", templatePath)
	}
	if err := localdeploy.CheckParameter(p, strconv.Itoa(seconds)); err != nil {
		return fmt.Errorf("the template's WorkerTimeout: %w", err)
	}
	return nil
}
