package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/kafkarelay"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgrelay"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// The stores a template's arbiter is on: STORE's values.
const (
	StoreDynamoDB = "dynamodb"
	StorePostgres = PostgresTag
)

// TemplateStore is the store tpl's functions run on: its Globals' STORE
// (template-postgres.yaml: "postgres"), or "dynamodb" when it sets none.
func TemplateStore(tpl *samtemplate.Template) string {
	return globalSetting(tpl, "STORE", StoreDynamoDB)
}

// cloudDatabaseSettings are the settings of a deployed PostgreSQL
// function that name what exists only in AWS: the proxy's endpoint, port,
// database and user (FIFOWORKER_POSTGRES_DSN, the local stack's server,
// replaces them all: pgopen.Open), and the relay function the writers
// nudge (the pipeline's own, RELAY_FUNCTION_NAME, reached through its
// local Lambda API).
var cloudDatabaseSettings = []string{"POSTGRES_HOST", "POSTGRES_PORT", "POSTGRES_DATABASE", "POSTGRES_USER", "RELAY_FUNCTION_NAME"}

// withoutCloudDatabase is vars without cloudDatabaseSettings, which
// cannot be resolved locally (the proxy is not deployed), and whether it
// had RELAY_FUNCTION_NAME.
func withoutCloudDatabase(vars map[string]any) (map[string]any, bool) {
	out := make(map[string]any, len(vars))
	for k, v := range vars {
		out[k] = v
	}
	_, nudges := out["RELAY_FUNCTION_NAME"]
	for _, k := range cloudDatabaseSettings {
		delete(out, k)
	}
	return out, nudges
}

// localPostgresSettings gives a PostgreSQL function (STORE "postgres") the
// local stack's database, FIFOWORKER_POSTGRES_DSN from the stack's
// variables (Config.Endpoints), and a writer (nudges) the pipeline's relay
// and the local Lambda API that invokes it.
func (c *Config) localPostgresSettings(env map[string]string, nudges bool, lambdaURL string) {
	if env["STORE"] != StorePostgres {
		return
	}
	for _, kv := range c.Endpoints {
		if k, v, _ := strings.Cut(kv, "="); k == pgopen.DSNVar {
			env[k] = v
		}
	}
	if nudges {
		env["RELAY_FUNCTION_NAME"] = c.relayName()
		env[lambdaEndpointVar] = lambdaURL
	}
}

// relayName is the relay function's name, as the local Lambda API knows it.
func (c *Config) relayName() string { return c.StackName + "-relay" }

// lambdaEndpointVar points a function's Lambda API calls (the nudges) at
// the pipeline's own (startup.ServiceEndpoint, the SDK's variable).
const lambdaEndpointVar = "AWS_ENDPOINT_URL_LAMBDA"

// lambdaEndpoint is an AWS configuration source that names the pipeline's
// Lambda API for the Lambda service alone: an in-process writer's nudges
// go there (startup.ServiceEndpoint reads the sources in order), every
// other client's requests where they went.
type lambdaEndpoint string

// GetServiceBaseEndpoint implements the SDK's service endpoint source.
func (e lambdaEndpoint) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	if sdkID == "Lambda" {
		return string(e), true, nil
	}
	return "", false, nil
}

// DefaultRelayBackstop is Config.RelayBackstop's default: the rate of
// template-postgres.yaml's RelaySchedule, rate(1 minute).
const DefaultRelayBackstop = time.Minute

// relayConcurrency is how many relay invocations the local Lambda API
// runs at once: RelayReservedConcurrency's default. Nudges beyond wait in
// its queue, as in Lambda's asynchronous queue.
const relayConcurrency = 2

// relayQueue is the events the local Lambda API holds at most; a nudge
// beyond is refused (429), which the writer logs and the backstop covers.
const relayQueue = 1024

// lambdaAPI is the pipeline's stand-in for Lambda's Invoke API, for the
// writers' nudges of the relay (InvocationType Event, as Lambda's API
// reference describes Invoke): it answers 202 once an event is queued,
// and relayConcurrency workers invoke the relay with each. It listens on
// 127.0.0.1 only.
type lambdaAPI struct {
	p      *Pipeline
	ln     net.Listener
	srv    *http.Server
	queue  chan []byte
	wg     sync.WaitGroup
	nudges atomic.Int64 // events accepted
	runs   atomic.Int64 // relay invocations that succeeded, nudges' and the backstop's
	failed atomic.Int64 // relay invocations that failed
}

// startLambdaAPI starts the pipeline's Lambda API and its workers, whose
// invocations outlive ctx's end (Build's): Stop ends them.
func startLambdaAPI(ctx context.Context, p *Pipeline) (*lambdaAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pipeline: the local Lambda API: %w", err)
	}
	a := &lambdaAPI{p: p, ln: ln, queue: make(chan []byte, relayQueue)}
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 5 * time.Second}
	a.wg.Add(1)
	go func() { defer a.wg.Done(); _ = a.srv.Serve(ln) }()
	ctx = context.WithoutCancel(ctx)
	for range relayConcurrency {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for ev := range a.queue {
				a.invokeRelay(ctx, ev, "nudge")
			}
		}()
	}
	return a, nil
}

// url is the API's base URL.
func (a *lambdaAPI) url() string { return "http://" + a.ln.Addr().String() }

// ServeHTTP takes POST /2015-03-31/functions/<relay>/invocations with
// X-Amz-Invocation-Type Event and queues its body for the relay.
func (a *lambdaAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/2015-03-31/functions/")
	name, ok2 := strings.CutSuffix(name, "/invocations")
	switch {
	case r.Method != http.MethodPost || !ok || !ok2:
		http.Error(w, `{"Type":"User","message":"not an Invoke request"}`, http.StatusNotFound)
		return
	case name != a.p.cfg.relayName():
		http.Error(w, `{"Type":"User","message":"Function not found: `+name+`"}`, http.StatusNotFound)
		return
	case r.Header.Get("X-Amz-Invocation-Type") != "Event":
		http.Error(w, `{"Type":"User","message":"the local Lambda API takes asynchronous invocations only"}`, http.StatusBadRequest)
		return
	case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 "):
		http.Error(w, `{"Type":"User","message":"unsigned request"}`, http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 256<<10))
	if err != nil || !json.Valid(body) {
		http.Error(w, `{"Type":"User","message":"the payload is not JSON"}`, http.StatusBadRequest)
		return
	}
	select {
	case a.queue <- body:
		a.nudges.Add(1)
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, `{"Type":"Service","message":"the asynchronous queue is full"}`, http.StatusTooManyRequests)
	}
}

// invokeRelay invokes the relay with event, for cause ("nudge",
// "schedule"), and counts and logs its outcome: a failure is the relay's
// to report, and the next trigger publishes what it left.
func (a *lambdaAPI) invokeRelay(ctx context.Context, event []byte, cause string) {
	var rep json.RawMessage
	err := a.p.Invoke(ctx, "relay", json.RawMessage(event), &rep)
	if err != nil {
		a.failed.Add(1)
		a.p.cfg.Logger.Warn("pipeline: the relay failed; the next trigger publishes what it left", "trigger", cause, "error", err)
		return
	}
	a.runs.Add(1)
	a.p.cfg.Logger.Debug("pipeline: the relay ran", "trigger", cause, "report", string(rep))
}

// scheduledEvent is EventBridge's scheduled event, as the relay's
// schedule delivers it.
func scheduledEvent(now time.Time, region string) []byte {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": newRequestID(), "detail-type": "Scheduled Event", "source": "aws.events",
		"account": "000000000000", "time": now.UTC().Format(time.RFC3339), "region": region, "resources": []string{}, "detail": map[string]any{},
	})
	return b
}

// backstop invokes the relay every interval with the scheduled event,
// until ctx ends: template-postgres.yaml's RelaySchedule.
func (a *lambdaAPI) backstop(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-t.C:
			a.invokeRelay(ctx, scheduledEvent(now, a.p.cfg.Region), "schedule")
		}
	}
}

// stop closes the API (a nudge in flight is refused: its writer logs it),
// then lets the workers finish the events queued.
func (a *lambdaAPI) stop() error {
	err := a.srv.Close()
	close(a.queue)
	a.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// RelayStats are the relay's triggers on PostgreSQL so far: the nudges
// the local Lambda API accepted, and the relay's invocations (the nudges'
// and the backstop's) that succeeded and that failed. Zero on DynamoDB.
type RelayStats struct{ Nudges, Runs, Failed int64 }

// RelayStats returns the relay's triggers so far.
func (p *Pipeline) RelayStats() RelayStats {
	if p.lambda == nil {
		return RelayStats{}
	}
	return RelayStats{Nudges: p.lambda.nudges.Load(), Runs: p.lambda.runs.Load(), Failed: p.lambda.failed.Load()}
}

// buildPostgres builds function fn in process with its PostgreSQL builder,
// the one its bootstrap's main_postgres.go calls (functions/<name>), on
// the database pgopen.Open opens from its settings.
func (p *Pipeline) buildPostgres(fn string, e *startup.Env, cfg aws.Config, log *slog.Logger) (localesm.Invoker, error) {
	if e.StringOr("TRANSPORT", "") == startup.TransportKafka { // main_kafka_postgres.go's
		switch fn {
		case "relay":
			return inProcess(kafkarelay.RelayPostgres(pgopen.Open), e, cfg, log)
		case "worker":
			return inProcess(lambdawire.WorkerKafkaPostgres(pgopen.Open), e, cfg, log)
		case "projector":
			return inProcess(lambdawire.ProjectorKafkaPostgres(pgopen.Open), e, cfg, log)
		}
	}
	switch fn {
	case "intake":
		return inProcess(lambdawire.IntakePostgres(pgopen.Open), e, cfg, log)
	case "relay":
		return inProcess(pgrelay.Relay(pgopen.Open), e, cfg, log)
	case "worker":
		return inProcess(lambdawire.WorkerPostgres(pgopen.Open), e, cfg, log)
	case "projector":
		return inProcess(lambdawire.ProjectorPostgres(pgopen.Open), e, cfg, log)
	case "sweeper":
		return inProcess(lambdawire.SweeperPostgres(pgopen.Open), e, cfg, log)
	}
	return nil, fmt.Errorf("unknown function")
}
