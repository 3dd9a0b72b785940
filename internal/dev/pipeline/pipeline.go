// Package pipeline runs the five functions of template.yaml on a local
// stack: each one built by its internal/lambdawire builder with the settings
// the template gives it (in process), or as its built bootstrap under the
// Lambda runtime interface emulator, and connected to its event sources by
// pkg/localesm with the event source settings of the template. A Kafka
// template (template-kafka.yaml, TRANSPORT=kafka) runs its functions' Kafka
// wiring and its Kafka mappings on the local broker (kafka.go); a
// PostgreSQL template (template-postgres.yaml, STORE=postgres) runs its
// functions' PostgreSQL wiring on the stack's server, the relay invoked
// for the writers' nudges through a local Lambda API and by a backstop
// schedule (postgres.go). The demo,
// `fifoworker local serve` and the end-to-end tests all run the pipeline
// through it, so they run what a deployment runs.
package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/base/sdkhttp"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/kafkarelay"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// Mode is how the functions run.
type Mode int

// The modes.
const (
	InProcess Mode = iota // each function's handler in this process
	UnderRIE              // each function's bootstrap under its own runtime interface emulator
)

// ErrInvalidConfig is wrapped by the error of a constructor of this
// package (Build, NewIdentity, NewHTTPAPI, StartRIE) for a configuration
// that cannot work; the message names the field.
var ErrInvalidConfig = errors.New("pipeline: invalid configuration")

// Config says what to run and where. Template, Deployed, StackName and
// Region are required; UnderRIE, so are RIE, Bootstraps and LogDir.
type Config struct {
	Template  *samtemplate.Template
	Deployed  *localdeploy.Result
	StackName string
	Region    string
	// Endpoints are the stack's AWS_ENDPOINT_URL_* variables, region and
	// credentials (localstack.State.Env). In process they must also be in
	// this process's environment: the SDK reads them from there.
	Endpoints []string
	Mode      Mode
	// RIE and Bootstraps are needed UnderRIE: the emulator's binary and
	// each function's bootstrap (BuildBootstraps), by name (Functions);
	// on PostgreSQL, MigrateFunction's too runs it (optional).
	RIE        string
	Bootstraps map[string]string
	LogDir     string // where RIE logs go (needed UnderRIE); in process, functions log to Logger
	// Settings override or add function settings, by function name
	// ("worker") then variable.
	Settings map[string]map[string]string
	Logger   *slog.Logger // the functions' log in process, and the mappings'; default: discard

	// APIOptions, when set, gives SDK middleware for an in-process
	// function's clients (request counting in tests).
	APIOptions func(function string) []func(*middleware.Stack) error

	// RelayBackstop is how often the relay runs on its schedule on
	// PostgreSQL (template-postgres.yaml's RelaySchedule), beside the
	// writers' nudges. Default (0): DefaultRelayBackstop, the template's
	// minute.
	RelayBackstop time.Duration

	OnSQSBatch    func(function string, r localesm.SQSBatchResult)
	OnStreamBatch func(r localesm.StreamBatchResult)
	OnKafkaBatch  func(function string, r localesm.KafkaBatchResult)
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Template == nil:
		return fmt.Errorf("%w: Template is nil", ErrInvalidConfig)
	case c.Deployed == nil:
		return fmt.Errorf("%w: Deployed is nil", ErrInvalidConfig)
	case c.StackName == "":
		return fmt.Errorf("%w: StackName is empty", ErrInvalidConfig)
	case c.Region == "":
		return fmt.Errorf("%w: Region is empty", ErrInvalidConfig)
	case c.Mode != InProcess && c.Mode != UnderRIE:
		return fmt.Errorf("%w: Mode %d is neither InProcess nor UnderRIE", ErrInvalidConfig, c.Mode)
	case c.Mode == InProcess:
		return nil
	case c.RIE == "":
		return fmt.Errorf("%w: RIE is empty, and Mode is UnderRIE", ErrInvalidConfig)
	case c.LogDir == "":
		return fmt.Errorf("%w: LogDir is empty, and Mode is UnderRIE", ErrInvalidConfig)
	}
	for _, fn := range Functions {
		if c.Bootstraps[fn] == "" {
			return fmt.Errorf("%w: Bootstraps[%q] is empty, and Mode is UnderRIE", ErrInvalidConfig, fn)
		}
	}
	return nil
}

// Pipeline is a running pipeline.
type Pipeline struct {
	cfg      Config
	invokers map[string]localesm.Invoker
	timeouts map[string]time.Duration
	settings map[string]map[string]string
	ries     []*RIEProcess
	mappings []mapping
	kafka    []KafkaMapping
	lambda   *lambdaAPI // the relay's nudges, on PostgreSQL
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	errs     []error
}

// functionResources names each function's logical id in template.yaml.
var functionResources = map[string]string{
	"intake": "IntakeFunction", "relay": "RelayFunction", "worker": "WorkerFunction",
	"projector": "ProjectorFunction", "sweeper": "SweeperFunction",
	MigrateFunction: "MigrateFunction",
}

// Build builds the functions and their event source mappings; Run starts
// the mappings. Until then, Invoke and HTTP reach the functions directly
// (what arrives on the stream or the queues meanwhile waits there). Stop
// it when done. A bad cfg is an error wrapping ErrInvalidConfig.
func Build(ctx context.Context, cfg Config) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{cfg: cfg, invokers: map[string]localesm.Invoker{}, timeouts: map[string]time.Duration{}, settings: map[string]map[string]string{}}
	if TemplateStore(cfg.Template) == StorePostgres {
		// The writers nudge the relay through Lambda's API: the
		// pipeline's, started before them.
		a, err := startLambdaAPI(ctx, p)
		if err != nil {
			return nil, err
		}
		p.lambda = a
	}
	fns := Functions
	if cfg.runsMigrate() {
		fns = append(slices.Clone(Functions), MigrateFunction)
	}
	for _, fn := range fns {
		if err := p.build(ctx, fn); err != nil {
			_ = p.Stop()
			return nil, err
		}
	}
	if err := p.buildMappings(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// Run starts the event source mappings; Stop, or the end of ctx, stops
// them.
func (p *Pipeline) Run(ctx context.Context) {
	runCtx, cancel := context.WithCancel(ctx)
	p.cancel = cancel
	mappings := p.mappings
	if p.lambda != nil {
		backstop := p.cfg.RelayBackstop
		if backstop <= 0 {
			backstop = DefaultRelayBackstop
		}
		mappings = append(mappings, mapping{name: "relay.schedule", run: func(ctx context.Context) error { return p.lambda.backstop(ctx, backstop) }})
	}
	for _, m := range mappings {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := m.run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
				p.mu.Lock()
				p.errs = append(p.errs, fmt.Errorf("pipeline: mapping %s: %w", m.name, err))
				p.mu.Unlock()
			}
		}()
	}
}

// mapping is an event source mapping, built and ready to run.
type mapping struct {
	name string
	run  func(context.Context) error
}

// Settings returns function fn's environment as template.yaml gives it,
// resolved against the deployment, with cfg.Settings applied.
func (c *Config) settings(fn, lambdaURL string) (map[string]string, error) {
	logical := functionResources[fn]
	out := map[string]string{}
	nudges := false
	globals, _ := c.Template.Globals["Function"].(map[string]any)
	for _, env := range []any{globals["Environment"], c.Template.Resources[logical].Properties["Environment"]} {
		m, _ := env.(map[string]any)
		vars, _ := m["Variables"].(map[string]any)
		vars, relay := withoutCloudDatabase(vars)
		nudges = nudges || relay
		resolved, err := localdeploy.Resolve(c.Template, c.Deployed, c.StackName, c.Region, vars)
		if err != nil {
			return nil, fmt.Errorf("pipeline: %s's environment: %w", fn, err)
		}
		rm, _ := resolved.(map[string]any)
		for k, v := range rm {
			out[k] = fmt.Sprint(v)
		}
	}
	localKafkaSettings(out)
	c.localPostgresSettings(out, nudges, lambdaURL)
	for k, v := range c.Settings[fn] {
		out[k] = v
	}
	return out, nil
}

// timeout is function fn's Timeout (its own, or Globals'), resolved.
func (c *Config) timeout(fn string) (time.Duration, error) {
	v, ok := c.Template.Resources[functionResources[fn]].Properties["Timeout"]
	if !ok {
		globals, _ := c.Template.Globals["Function"].(map[string]any)
		v = globals["Timeout"]
	}
	r, err := localdeploy.Resolve(c.Template, c.Deployed, c.StackName, c.Region, v)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(fmt.Sprint(r))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("pipeline: %s's timeout %v is not a number of seconds", fn, r)
	}
	return time.Duration(n) * time.Second, nil
}

func (p *Pipeline) build(ctx context.Context, fn string) error {
	lambdaURL := ""
	if p.lambda != nil {
		lambdaURL = p.lambda.url()
	}
	env, err := p.cfg.settings(fn, lambdaURL)
	if err != nil {
		return err
	}
	p.settings[fn] = maps.Clone(env)
	timeout, err := p.cfg.timeout(fn)
	if err != nil {
		return err
	}
	p.timeouts[fn] = timeout
	if p.cfg.Mode == UnderRIE {
		for _, kv := range p.cfg.Endpoints {
			k, v, _ := strings.Cut(kv, "=")
			if _, set := env[k]; !set {
				env[k] = v
			}
		}
		rie, err := StartRIE(ctx, RIEConfig{Name: fn, RIE: p.cfg.RIE, Bootstrap: p.cfg.Bootstraps[fn], LogDir: p.cfg.LogDir, Timeout: timeout, Env: env})
		if err != nil {
			return err
		}
		p.ries = append(p.ries, rie)
		invoker, err := localesm.NewRIE(localesm.RIEConfig{Addr: rie.Addr})
		if err != nil {
			return err
		}
		p.invokers[fn] = invoker
		return nil
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("pipeline: AWS configuration: %w", err)
	}
	awsCfg.HTTPClient = sdkhttp.GuardRequestBodies(awsCfg.HTTPClient) // as the deployed functions' (startup.Env.AWSConfig)
	if p.cfg.APIOptions != nil {
		awsCfg.APIOptions = append(awsCfg.APIOptions, p.cfg.APIOptions(fn)...)
	}
	if u := env[lambdaEndpointVar]; u != "" {
		// What the variable does for a bootstrap: the SDK's loader read
		// this process's environment, not the function's.
		awsCfg.ConfigSources = append([]any{lambdaEndpoint(u)}, awsCfg.ConfigSources...)
	}
	log := p.cfg.Logger.With("function", fn)
	e := startup.NewEnvFrom(env)
	kafka := env["TRANSPORT"] == startup.TransportKafka // the builders a kafka-tagged bootstrap's main calls
	var inv localesm.Invoker
	switch {
	case env["STORE"] == StorePostgres:
		inv, err = p.buildPostgres(fn, e, awsCfg, log) //nolint:contextcheck // a builder has no context, as at a function's init
	case fn == "intake":
		inv, err = inProcess(lambdawire.Intake, e, awsCfg, log)
	case fn == "relay" && kafka:
		inv, err = inProcess(kafkarelay.Relay, e, awsCfg, log)
	case fn == "relay":
		inv, err = inProcess(lambdawire.Relay, e, awsCfg, log)
	case fn == "worker" && kafka:
		inv, err = inProcess(lambdawire.WorkerKafka, e, awsCfg, log)
	case fn == "worker":
		inv, err = inProcess(lambdawire.Worker, e, awsCfg, log)
	case fn == "projector" && kafka:
		inv, err = inProcess(lambdawire.ProjectorKafka, e, awsCfg, log)
	case fn == "projector":
		inv, err = inProcess(lambdawire.Projector, e, awsCfg, log)
	case fn == "sweeper":
		inv, err = inProcess(lambdawire.Sweeper, e, awsCfg, log)
	default:
		err = fmt.Errorf("unknown function")
	}
	if err != nil {
		return fmt.Errorf("pipeline: build %s: %w", fn, err)
	}
	p.invokers[fn] = inv
	return nil
}

func inProcess[E, R any](build startup.Builder[E, R], env *startup.Env, cfg aws.Config, log *slog.Logger) (localesm.Invoker, error) {
	h, err := build(env, cfg, log)
	if err != nil {
		return nil, err
	}
	return localesm.Func(h), nil
}

// event is one entry of a function's Events, resolved.
type event struct {
	name  string
	typ   string
	props map[string]any
}

func (c *Config) events(fn string) ([]event, error) {
	evs, _ := c.Template.Resources[functionResources[fn]].Properties["Events"].(map[string]any)
	var out []event
	for name, ev := range evs {
		e, _ := ev.(map[string]any)
		typ, _ := e["Type"].(string)
		if typ != "SQS" && typ != "DynamoDB" {
			continue // HTTP and schedules are invoked directly
		}
		r, err := localdeploy.Resolve(c.Template, c.Deployed, c.StackName, c.Region, e["Properties"])
		if err != nil {
			return nil, fmt.Errorf("pipeline: %s's event %s: %w", fn, name, err)
		}
		props, _ := r.(map[string]any)
		out = append(out, event{name: name, typ: typ, props: props})
	}
	return out, nil
}

func (p *Pipeline) buildMappings(ctx context.Context) error {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("pipeline: AWS configuration: %w", err)
	}
	awsCfg.HTTPClient = sdkhttp.GuardRequestBodies(awsCfg.HTTPClient) // as the deployed functions' (startup.Env.AWSConfig)
	sqsClient := sqs.NewFromConfig(awsCfg)
	streams := dynamodbstreams.NewFromConfig(awsCfg)
	s3Client := lambdawire.S3(awsCfg)
	for _, fn := range Functions {
		if err := p.buildKafkaMappings(fn, s3Client, sqsClient); err != nil {
			return err
		}
		evs, err := p.cfg.events(fn)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			var run func(context.Context) error
			switch ev.typ {
			case "SQS":
				m, err := p.sqsMapping(fn, ev, sqsClient)
				if err != nil {
					return err
				}
				run = m.Run
			case "DynamoDB":
				m, err := p.streamMapping(fn, ev, streams, sqsClient)
				if err != nil {
					return err
				}
				run = m.Run
			}
			p.mappings = append(p.mappings, mapping{name: fn + "." + ev.name, run: run})
		}
	}
	return nil
}

// queueURL maps a queue ARN the template gives an event source to the URL
// the deployment made for it.
func (p *Pipeline) queueURL(arn string) (string, error) { return p.deployedByARN(arn) }

// deployedByARN maps the ARN of a queue or a bucket the template gives an
// event source to its Ref, what the deployment made for it: the queue's
// URL, the bucket's name.
func (p *Pipeline) deployedByARN(arn string) (string, error) {
	for logical, attrs := range p.cfg.Deployed.Attributes {
		if attrs["Arn"] == arn {
			return p.cfg.Deployed.Resources[logical], nil
		}
	}
	return "", fmt.Errorf("pipeline: nothing deployed has ARN %s", arn)
}

func intProp(props map[string]any, key string) int {
	n, _ := strconv.Atoi(fmt.Sprint(props[key]))
	return n
}

// boolProp reads a boolean property: true, or "true" as CloudFormation
// also accepts.
func boolProp(props map[string]any, key string) bool {
	b, _ := strconv.ParseBool(fmt.Sprint(props[key]))
	return b
}

func reportsItemFailures(props map[string]any) bool {
	types, _ := props["FunctionResponseTypes"].([]any)
	for _, t := range types {
		if t == "ReportBatchItemFailures" {
			return true
		}
	}
	return false
}

func (p *Pipeline) sqsMapping(fn string, ev event, client *sqs.Client) (*localesm.SQSMapping, error) {
	url, err := p.queueURL(fmt.Sprint(ev.props["Queue"]))
	if err != nil {
		return nil, err
	}
	scaling, _ := ev.props["ScalingConfig"].(map[string]any)
	return localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: p.invokers[fn],
		QueueURL:                url,
		BatchSize:               intProp(ev.props, "BatchSize"),
		MaximumConcurrency:      intProp(scaling, "MaximumConcurrency"),
		FunctionTimeout:         p.timeouts[fn],
		ReportBatchItemFailures: reportsItemFailures(ev.props),
		FunctionARN:             fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s-%s", p.cfg.Region, localdeploy.LocalAccountID, p.cfg.StackName, fn),
		Logger:                  p.cfg.Logger.With("mapping", fn+"."+ev.name),
		OnBatch: func(r localesm.SQSBatchResult) {
			if p.cfg.OnSQSBatch != nil {
				p.cfg.OnSQSBatch(fn, r)
			}
		},
	})
}

func (p *Pipeline) streamMapping(fn string, ev event, streams *dynamodbstreams.Client, sender *sqs.Client) (*localesm.StreamMapping, error) {
	sc, err := p.streamConfig(fn, ev, sender)
	if err != nil {
		return nil, err
	}
	sc.Client, sc.Invoker = streams, p.invokers[fn]
	return localesm.NewStreamMapping(sc)
}

// streamConfig is the stream mapping of function fn's DynamoDB event ev,
// configured as the template says.
func (p *Pipeline) streamConfig(fn string, ev event, sender localesm.MessageSender) (localesm.StreamConfig, error) {
	sc := localesm.StreamConfig{
		StreamARN:                  fmt.Sprint(ev.props["Stream"]),
		StartingPosition:           localesm.StartingPosition(fmt.Sprint(ev.props["StartingPosition"])),
		BatchSize:                  intProp(ev.props, "BatchSize"),
		ReportBatchItemFailures:    reportsItemFailures(ev.props),
		BisectBatchOnFunctionError: boolProp(ev.props, "BisectBatchOnFunctionError"),
		FunctionTimeout:            p.timeouts[fn],
		FunctionARN:                fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s-%s", p.cfg.Region, localdeploy.LocalAccountID, p.cfg.StackName, fn),
		PollInterval:               100 * time.Millisecond,
		Region:                     p.cfg.Region,
		Logger:                     p.cfg.Logger.With("mapping", fn+"."+ev.name),
		OnBatch:                    p.cfg.OnStreamBatch,
	}
	if _, ok := ev.props["MaximumRetryAttempts"]; ok {
		n := intProp(ev.props, "MaximumRetryAttempts")
		sc.MaximumRetryAttempts = &n
	}
	if dest, ok := ev.props["DestinationConfig"].(map[string]any); ok {
		onFailure, _ := dest["OnFailure"].(map[string]any)
		url, err := p.queueURL(fmt.Sprint(onFailure["Destination"]))
		if err != nil {
			return localesm.StreamConfig{}, err
		}
		sc.OnFailure = &localesm.OnFailureDestination{Client: sender, QueueURL: url}
	}
	return sc, nil
}

// Invoke runs function fn once with event and decodes its response into
// out: how the HTTP API reaches intake and the schedule the sweeper.
func (p *Pipeline) Invoke(ctx context.Context, fn string, event, out any) error {
	inv, ok := p.invokers[fn]
	if !ok {
		return fmt.Errorf("pipeline: no function %q", fn)
	}
	payload, err := json.Marshal(event)
	if err != nil {
		return err
	}
	res, err := inv.Invoke(ctx, localesm.Invocation{
		RequestID: newRequestID(), Timeout: p.timeouts[fn], Payload: payload,
		FunctionARN: fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s-%s", p.cfg.Region, localdeploy.LocalAccountID, p.cfg.StackName, fn),
	})
	if err != nil {
		return fmt.Errorf("pipeline: invoke %s: %w", fn, err)
	}
	if res.Status != localesm.StatusOK {
		return fmt.Errorf("pipeline: %s failed (%v): %s", fn, res.Status, res.Payload)
	}
	if out != nil {
		if err := json.Unmarshal(res.Payload, out); err != nil {
			return fmt.Errorf("pipeline: %s's response: %w", fn, err)
		}
	}
	return nil
}

// RIE returns the runtime interface emulator running function fn, or nil
// in process.
func (p *Pipeline) RIE(fn string) *RIEProcess {
	for _, r := range p.ries {
		if r.Name == fn {
			return r
		}
	}
	return nil
}

// Setting is function fn's setting name as the pipeline built it (from
// template.yaml and Config.Settings), e.g. intake's TENANT_CLAIM.
func (p *Pipeline) Setting(fn, name string) string { return p.settings[fn][name] }

// HTTP sends an API Gateway HTTP API request to intake.
func (p *Pipeline) HTTP(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	var resp events.APIGatewayV2HTTPResponse
	err := p.Invoke(ctx, "intake", req, &resp)
	return resp, err
}

// Sweep runs the sweeper once.
func (p *Pipeline) Sweep(ctx context.Context, dryRun bool) (sweeper.Report, error) {
	var rep sweeper.Report
	err := p.Invoke(ctx, "sweeper", map[string]bool{"dry_run": dryRun}, &rep)
	return rep, err
}

// Stop stops the mappings (each settles what it has in flight), then the
// emulators, and returns what went wrong in a mapping while it ran.
func (p *Pipeline) Stop() error {
	if p.cancel != nil {
		p.cancel()
	}
	p.wg.Wait()
	var errs []error
	if p.lambda != nil {
		errs = append(errs, p.lambda.stop())
	}
	for _, r := range p.ries {
		r.Stop()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(append(errs, p.errs...)...)
}

// newRequestID returns a random UUID, as Lambda's request ids are.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
