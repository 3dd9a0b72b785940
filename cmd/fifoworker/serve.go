package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

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

// localServeOptions are `fifoworker local serve`'s.
type localServeOptions struct {
	Local         localstack.Options
	Deploy        deployFlags
	Addr          string // where the jobs API listens: a loopback address only
	RIE           bool   // the built bootstraps under the runtime interface emulator
	WorkerTimeout int    // seconds, one of the template's WorkerTimeout values; 0: its default
}

func (c *cli) localServeCmd() *cobra.Command {
	o := &localServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "run the five functions on a fresh stack and serve the jobs API over HTTP",
		Long: `Start a fresh stack (--name serve), deploy, run the five functions with their event
source mappings, and serve the jobs API on --addr until SIGINT/SIGTERM; then stop
everything. It prints the stack's environment to eval (endpoints, FIFOWORKER_* names,
local tokens) and writes it to the stack's env file, which the operator's commands read
by default (--stack serve).`,
		Example: `  fifoworker local serve --worker-timeout 10`,
		Args:    noArgs,
		RunE:    c.choose(o, nil),
	}
	fs := cmd.Flags()
	bindStack(fs, &o.Local, serveStack)
	bindStart(fs, &o.Local)
	bindDeploy(fs, &o.Deploy)
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "where the jobs API listens (a loopback address only)")
	fs.BoolVar(&o.RIE, "rie", false, "run the built bootstraps under the runtime interface emulator")
	fs.IntVar(&o.WorkerTimeout, "worker-timeout", 0, "the worker's timeout in seconds, one of the template's WorkerTimeout values (the commands visibility is 6 times it); 0: the template's default")
	markTemplate(cmd)
	return cmd
}

// Validate refuses a worker timeout the template does not allow, before
// any stack starts.
func (o *localServeOptions) Validate() error {
	if o.WorkerTimeout == 0 {
		return nil
	}
	if err := checkWorkerTimeout(o.Deploy.Template, o.WorkerTimeout); err != nil {
		return fmt.Errorf("--worker-timeout %d: %w", o.WorkerTimeout, err)
	}
	return nil
}

// Run is what `sam local start-api` gives, plus the event source mappings
// sam local lacks. It listens first (a refused or busy address costs no
// stack), then starts a fresh stack, deploys the template and serves until
// SIGINT or SIGTERM, after which it stops the server, the mappings, the
// emulators and the stack.
func (o *localServeOptions) Run(ctx context.Context, c *cli) error {
	var prepare func(*samtemplate.Template)
	if o.WorkerTimeout != 0 {
		prepare = func(tpl *samtemplate.Template) { demo.SetWorkerTimeout(tpl, o.WorkerTimeout) }
	}
	ln, err := pipeline.ListenLoopback(o.Addr)
	switch {
	case errors.Is(err, pipeline.ErrNotLoopback):
		return usageErrorf("--addr: %w", err)
	case err != nil:
		return fmt.Errorf("--addr: %w", err)
	}
	defer func() { _ = ln.Close() }()
	return withFreshStack(ctx, o.Local, o.Deploy, prepare, c.stderr, func(ctx context.Context, s *localstack.State, tpl *samtemplate.Template, res *localdeploy.Result) error {
		root, _ := os.Getwd()
		envFile, err := localstack.EnvFile(o.Local)
		if err != nil {
			return err
		}
		return serve(ctx, serveOptions{
			State: s, Template: tpl, Deployed: res, StackName: o.Deploy.StackName, Listener: ln, RIE: o.RIE,
			Root: root, LogDir: filepath.Join(o.Local.CacheDir, "serve-logs", o.Local.Name), Out: c.stdout, EnvFile: envFile,
		})
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

// bootstraps is the build of the bootstraps serve runs under the
// runtime interface emulator: with the tags of the template's transport
// (the kafka tag for template-kafka.yaml, whose functions refuse a
// bootstrap built without it), as the demo builds them.
func (o *serveOptions) bootstraps() pipeline.BootstrapConfig {
	return pipeline.BootstrapConfig{Root: o.Root, Dir: filepath.Join(o.LogDir, "bootstraps"), Tags: pipeline.TransportTags(pipeline.TemplateTransport(o.Template))}
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
		build := o.bootstraps()
		say("building the five bootstraps (%s) ...", build.Describe())
		if cfg.Bootstraps, err = pipeline.BuildBootstrapsFor(ctx, build); err != nil {
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
	id, err := pipeline.NewIdentity(pipeline.IdentityConfig{TenantClaim: p.Setting("intake", "TENANT_CLAIM")})
	if err != nil {
		return err
	}
	api, err := pipeline.NewHTTPAPI(pipeline.HTTPAPIConfig{Handler: p.HTTP, Identity: id, Logger: slog.New(slog.NewTextHandler(o.Out, nil))})
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

	return serveUntil(ctx, o.Listener, api, 30*time.Second, func() {
		say("stopping: the server (requests in flight finish), then the mappings and the emulators")
	})
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
