package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

var tenants = []string{"t-1", "t-2", "t-3"}

// run is the whole run: the chaos phase, the settling, the final checks.
func (w *World) run() error {
	w.faulty = true
	steps := 100 + w.rng.IntN(250)
	for i := 0; i < steps || (w.inOutage() && i < 4*steps); i++ {
		w.step()
		if w.err != nil {
			return w.err
		}
	}
	w.logf("--- faults stop; the causes of the poison messages are fixed")
	w.settle()
	if w.err == nil {
		w.checkEnd()
	}
	return w.err
}

// step runs one step the scheduler picks.
func (w *World) step() {
	w.stats.Steps++
	switch r := w.rng.IntN(100); {
	case r < 13:
		w.produce()
	case r < 15:
		w.cancelSome()
	case r < 17:
		w.get()
	case r < 18:
		kinds := 5
		if w.kafka != nil {
			kinds = 7
		}
		switch w.rng.IntN(kinds) {
		case 0, 1:
			w.poison()
		case 2:
			w.forge()
		case 3:
			w.corrupt()
		case 4:
			w.forgeEvent()
		case 5:
			w.headerBomb()
		default:
			w.bigRecords()
		}
	case r < 19:
		if w.rng.IntN(4) == 0 {
			w.outage()
		} else {
			w.fixPoison()
		}
	case r < 35:
		w.relay(false)
	case r < 55 && w.kafka != nil:
		w.consumeKafka(w.kafka.worker)
	case r < 55:
		w.consume(w.commands, w.workerFn, "worker", workerTimeout)
	case r < 70 && w.kafka != nil:
		w.consumeKafka(w.kafka.projector)
	case r < 70:
		w.consume(w.evts, w.projector, "projector", projectorTimeout)
	case r < 86:
		w.advance()
	case r < 89:
		w.sweep()
	case r < 93 && w.kafka != nil:
		w.kafkaFault()
	case r < 93:
		w.redrive(false)
	case r < 96:
		w.deliverDelayed(false)
	default:
		if !w.resumeOne(true) {
			w.advance()
		}
	}
}

// advance moves the clock: mostly seconds, sometimes minutes, rarely more
// than the visibility timeouts and the sweeper's thresholds.
func (w *World) advance() {
	var d time.Duration
	switch r := w.rng.IntN(100); {
	case r < 40:
		d = time.Duration(100+w.rng.IntN(1900)) * time.Millisecond
	case r < 80:
		d = time.Duration(2+w.rng.IntN(58)) * time.Second
	case r < 95:
		d = time.Duration(60+w.rng.IntN(360)) * time.Second
	default:
		d = time.Duration(10+w.rng.IntN(30)) * time.Minute
	}
	w.clock.Advance(d)
	w.logf("clock +%s", d)
}

// request is an HTTP API request as API Gateway hands it to intake, with
// the tenant's verified JWT claims.
func request(method, path, tenant string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, Headers: map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", Stage: "$default", RequestID: "api-" + path,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "user-" + tenant, "tenant": tenant}},
			},
		},
	}
}

// http calls intake in an invocation of its own.
func (w *World) http(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	ctx, _, cancel := w.invoke("intake", 10*time.Second)
	defer cancel()
	resp, err := w.intake.Handle(ctx, req)
	if err != nil {
		w.violate("intake returned an error: %v", err)
	}
	return resp
}

// post sends POST /jobs for in, and checks the answer against the store.
func (w *World) post(in *intent, spec map[string]string) {
	body, _ := json.Marshal(map[string]any{"spec": spec})
	req := request(http.MethodPost, "/jobs", in.tenant)
	req.Headers["content-type"] = "application/json"
	req.Headers["idempotency-key"] = in.key
	req.Body = string(body)
	before := w.journal.peek(context.Background(), in.jobID)
	resp := w.http(req)
	after := w.journal.peek(context.Background(), in.jobID)
	w.logf("intake: POST %s/%s %v → %d", in.tenant, in.key, spec, resp.StatusCode)
	var created intake.CreatedView
	_ = json.Unmarshal([]byte(resp.Body), &created)
	same := before != nil && itemsOf(before.Spec) == itemsOf(spec) && before.Spec["fate"] == spec["fate"]
	switch {
	case resp.StatusCode == http.StatusAccepted && before == nil && after != nil && created.JobID == in.jobID:
		in.created = true
	case resp.StatusCode == http.StatusOK && same && created.JobID == in.jobID:
		in.created = true
		w.stats.IntakeRetries++
	case resp.StatusCode == http.StatusConflict && before != nil && !same:
		w.stats.IntakeConflicts++
	case failedForNow(resp.StatusCode) && w.faulty:
	default:
		w.violate("POST /jobs of %s/%s answered %d %s; the job was %s and is %s", in.tenant, in.key, resp.StatusCode, resp.Body, describe(before), describe(after))
	}
}

// failedForNow reports whether intake's answer says the request failed
// and may be retried: 500, or 503 for a store that throttled.
func failedForNow(status int) bool {
	return status == http.StatusInternalServerError || status == http.StatusServiceUnavailable
}

// produce is a client: a new intent, or a retry of one (now and then with
// another spec, which must be refused).
func (w *World) produce() {
	if len(w.intents) > 0 && w.rng.IntN(5) == 0 {
		in := w.intents[w.rng.IntN(len(w.intents))]
		spec := in.spec
		if w.rng.IntN(4) == 0 {
			spec = map[string]string{"items": strconv.Itoa(itemsOf(in.spec) + 1)}
		}
		w.post(in, spec)
		return
	}
	in := w.newIntent("intent")
	w.post(in, in.spec)
}

func (w *World) newIntent(prefix string) *intent {
	tenant := tenants[w.rng.IntN(len(tenants))]
	key := fmt.Sprintf("%s-%d", prefix, len(w.intents)+1)
	spec := map[string]string{"items": strconv.Itoa(w.rng.IntN(30))}
	if w.rng.IntN(25) == 0 {
		spec["fate"] = "poison"
	}
	in := &intent{tenant: tenant, key: key, spec: spec, jobID: jobs.DeriveJobID(tenant, key)}
	w.intents = append(w.intents, in)
	return in
}

// pick returns a random job, or nil.
func (w *World) pick() *jobs.Job {
	if len(w.jobIDs) == 0 {
		return nil
	}
	return w.journal.peek(context.Background(), w.jobIDs[w.rng.IntN(len(w.jobIDs))])
}

// cancelSome cancels a job through the API: its owner (or, now and then,
// another tenant, who must learn nothing and change nothing).
func (w *World) cancelSome() {
	if j := w.pick(); j != nil {
		tenant := j.Tenant
		if w.rng.IntN(5) == 0 {
			tenant = tenants[(slices.Index(tenants, j.Tenant)+1)%len(tenants)]
		}
		w.cancel(j.ID, tenant)
	}
}

// cancel sends DELETE /jobs/{id} as tenant and checks the answer.
func (w *World) cancel(id, tenant string) {
	before := w.journal.peek(context.Background(), id)
	resp := w.http(request(http.MethodDelete, "/jobs/"+id, tenant))
	after := w.journal.peek(context.Background(), id)
	w.logf("intake: DELETE %s as %s → %d", id, tenant, resp.StatusCode)
	switch {
	case tenant != before.Tenant:
		if (resp.StatusCode != http.StatusNotFound && (!failedForNow(resp.StatusCode) || !w.faulty)) ||
			after.Version != before.Version {
			w.violate("DELETE of %s's job %s by %s answered %d and left it %s", before.Tenant, id, tenant, resp.StatusCode, describe(after))
		}
	case resp.StatusCode == http.StatusOK && !before.Status.Final() && after.Status == jobs.StatusCancelled &&
		after.Version == before.Version+1:
	case resp.StatusCode == http.StatusConflict && before.Status.Final() && after.Version == before.Version:
	case failedForNow(resp.StatusCode) && w.faulty:
	default:
		w.violate("DELETE of %s answered %d %s; the job was %s and is %s", id, resp.StatusCode, resp.Body, describe(before), describe(after))
	}
}

// get reads a job through the API and checks what it shows.
func (w *World) get() {
	j := w.pick()
	if j == nil {
		return
	}
	tenant := j.Tenant
	if w.rng.IntN(5) == 0 {
		tenant = tenants[(slices.Index(tenants, j.Tenant)+1)%len(tenants)]
	}
	resp := w.http(request(http.MethodGet, "/jobs/"+j.ID, tenant))
	if tenant != j.Tenant {
		if resp.StatusCode != http.StatusNotFound && (!failedForNow(resp.StatusCode) || !w.faulty) {
			w.violate("GET of %s's job %s by %s answered %d", j.Tenant, j.ID, tenant, resp.StatusCode)
		}
		return
	}
	if failedForNow(resp.StatusCode) && w.faulty {
		return
	}
	var v intake.JobView
	if err := json.Unmarshal([]byte(resp.Body), &v); resp.StatusCode != http.StatusOK || err != nil {
		w.violate("GET of %s answered %d %s", j.ID, resp.StatusCode, resp.Body)
		return
	}
	if v.Status != string(j.Status) || v.Version != j.Version || v.Generation != j.Generation || v.Progress != j.Progress {
		w.violate("GET of %s shows %s v%d g%d progress %d; the job is %s", j.ID, v.Status, v.Version, v.Generation, v.Progress, describe(j))
	}
	if j.Status == jobs.StatusCompleted {
		if v.Result == nil || v.Result.Key != j.Result.Key || v.Result.SHA256 != j.Result.SHA256 ||
			len(w.presigned) == 0 || w.presigned[len(w.presigned)-1] != j.Result.Key {
			w.violate("GET of completed job %s shows result %+v; the job's is %s", j.ID, v.Result, j.Result.Key)
		}
	}
}

// poison sends a command for a job that does not exist yet, as a producer
// that ran ahead of the job's creation would: the worker refuses it for
// good, and the quarantine holds the job's group until the cause is fixed
// (the job created) and the group redriven.
func (w *World) poison() {
	in := w.newIntent("early")
	in.poison = true
	body, _ := json.Marshal(outbox.Command{
		Type: jobs.MessageRun, CommandID: jobs.OutboxID(in.jobID, 0), JobID: in.jobID, IntentID: in.key,
		Tenant: in.tenant, Version: 0, IssuedAt: w.clock.Now(),
	})
	w.inject(true, in.jobID, string(body), "early-"+in.key, false)
	w.stats.Poisons++
	w.logf("poison: a command for %s, which does not exist yet", in.jobID)
}

// forge sends a command naming an existing job with another tenant: the
// worker refuses it for good (the claim's condition has the tenant), and
// the quarantine holds the job's group, with the job's own later commands
// parked behind it, until the operator discards it. With Kafka, half of
// them have a null key (refused for good too), and the record holds its
// partition until its retries run out and it goes to the on-failure
// destination, which the operator discards it from.
func (w *World) forge() {
	j := w.pick()
	if j == nil {
		return
	}
	other := tenants[(slices.Index(tenants, j.Tenant)+1)%len(tenants)]
	body, _ := json.Marshal(outbox.Command{
		Type: jobs.MessageRun, CommandID: jobs.OutboxID(j.ID, 0), JobID: j.ID, IntentID: j.IntentID,
		Tenant: other, Version: 0, IssuedAt: w.clock.Now(),
	})
	group := j.ID
	if w.kafka != nil && w.rng.IntN(2) == 0 {
		group = "" // a record with a null key: its partition's null-key lane
	}
	w.inject(true, group, string(body), fmt.Sprintf("forged-%d", len(w.hostile)+1), true)
	w.stats.Hostile++
	w.logf("hostile: a command for %s naming tenant %s", j.ID, other)
}

// corrupt sends an event that is not JSON into a job's events group: the
// projector refuses it for good, and the quarantine holds the group until
// the operator discards it (with Kafka, as for forge).
func (w *World) corrupt() {
	j := w.pick()
	if j == nil {
		return
	}
	group := j.ID
	if w.kafka != nil && w.rng.IntN(2) == 0 {
		group = "" // a record with a null key: its partition's null-key lane
	}
	w.inject(false, group, `{"type":"job.progress","event_id":`, fmt.Sprintf("corrupt-%d", len(w.hostile)+1), true)
	w.stats.Hostile++
	w.logf("hostile: a corrupt event in %s's group", j.ID)
}

// outage makes a component refuse every request for a while: long enough,
// for the quarantine's store, that messages reach their queue's
// maxReceiveCount and SQS dead-letters them (the backstop).
func (w *World) outage() {
	comp := []string{"jobs", "s3", "quarantine", "projection"}[w.rng.IntN(4)]
	d := time.Duration(5+w.rng.IntN(235)) * time.Minute
	w.outages[comp] = w.clock.Now().Add(d)
	w.stats.Outages++
	w.logf("outage: %s refuses everything for %s", comp, d)
}

// inOutage reports whether a component is out.
func (w *World) inOutage() bool {
	for _, until := range w.outages {
		if w.clock.Now().Before(until) {
			return true
		}
	}
	return false
}

// fixPoison creates the job of an early command, which fixes its cause.
func (w *World) fixPoison() {
	for _, in := range w.intents {
		if in.poison && w.journal.peek(context.Background(), in.jobID) == nil {
			w.post(in, in.spec)
			return
		}
	}
}

// redrive has the operator redrive held groups, or held keys of a topic
// (all of them, or some), first discarding what no redrive can fix and
// fixing the cause of an early command (with all, always). Without all, a
// redrive may be interrupted after a few copies; with all (the settling
// phase), a draining key of a topic is redriven again only once its
// copies can have been processed.
func (w *World) redrive(all bool) {
	if w.kafka != nil && w.kafka.change.redrivesWait() {
		return // the procedure redrives the held keys once the new count is deployed
	}
	for _, q := range w.sources {
		holds, err := w.qmem.Holds(context.Background(), q.name)
		if err != nil {
			w.violate("holds of %s: %v", q.name, err)
			return
		}
		for _, h := range holds {
			if !all && w.rng.IntN(2) == 0 {
				continue
			}
			if all && h.State == quarantine.StateDraining && w.copiesPending(q.name, h.Group) {
				// Its copies are still on their way: a new epoch would drop
				// them, and the redrive of the next round theirs.
				continue
			}
			if q.commands && (all || w.rng.IntN(2) == 0) {
				w.fixEarly(h.Group)
			}
			discard := h.State == quarantine.StateHeld && (all || w.rng.IntN(2) == 0)
			stopAfter := -1
			if !all && w.rng.IntN(4) == 0 {
				stopAfter = w.rng.IntN(3)
			}
			// The operator's command runs as a fiber: a slow request
			// suspends it while consumers go on, and a crash interrupts it.
			octx, inv, done := w.invoke("operator", time.Hour)
			w.spawn(inv, func() {
				defer done()
				if discard {
					w.discardHostile(octx, q, h.Group)
				}
				ctx, cancel := context.WithCancel(octx)
				defer cancel()
				var progress func(quarantine.RedriveProgress)
				if stopAfter >= 0 {
					progress = func(p quarantine.RedriveProgress) {
						if p.Sent > stopAfter {
							cancel()
						}
					}
				}
				op, err := w.operator(q, progress)
				if err != nil {
					w.fail(err)
					return
				}
				rep, err := op.Redrive(ctx, h.Group, false)
				w.stats.Redrives++
				w.logf("operator: redrive %s %s: epoch %d, %d sent, %s, err %v", q.name, h.Group, rep.Epoch, rep.Sent, rep.State, err)
			})
		}
	}
}

// operator is q's quarantine operator, telling progress (nil: no one) of
// each copy it sends. Its settings were checked when the world was made.
func (w *World) operator(q source, progress func(quarantine.RedriveProgress)) (*quarantine.Operator, error) {
	cfg := q.operator
	cfg.Progress = progress
	return quarantine.NewOperator(cfg)
}

// discardHostile has the operator discard the held group's parked
// messages that no redrive can fix.
func (w *World) discardHostile(ctx context.Context, q source, group string) {
	parked, err := w.qmem.Messages(ctx, q.name, group, quarantine.StatusParked, "", 0)
	if err != nil {
		w.violate("parked messages of %s: %v", group, err)
		return
	}
	for _, p := range parked {
		if !w.isHostile(p) {
			continue
		}
		seq := quarantine.SeqNumber(p.Sequence)
		op, err := w.operator(q, nil)
		if err != nil {
			w.fail(err)
			return
		}
		_, h, err := op.Discard(ctx, group, seq)
		w.logf("operator: discard %s %s %s (%s): %s, err %v", q.name, group, seq, p.DeduplicationID, h.State, err)
		if err == nil {
			w.stats.Discarded++
		}
	}
}

// deliverDelayed lets requests held in the network arrive: one, or all.
func (w *World) deliverDelayed(all bool) {
	for len(w.delayed) > 0 {
		i := 0
		if !all {
			i = w.rng.IntN(len(w.delayed))
		}
		d := w.delayed[i]
		w.delayed = slices.Delete(w.delayed, i, i+1)
		err := d.apply()
		w.logf("network: %s sent at %s arrives: %v", d.op, d.at.Sub(Epoch), err)
		if !all {
			return
		}
	}
}

// sweep runs the sweeper once, in an invocation of its own, unless a run
// is still going on (suspended at a slow request): runs of one Sweeper do
// not overlap, as the schedule's do not.
func (w *World) sweep() {
	if w.sweeping {
		return
	}
	w.sweeping = true
	ctx, inv, cancel := w.invoke("sweeper", sweeperTimeout)
	w.spawn(inv, func() {
		defer cancel()
		faulty := w.faulty
		rep, err := w.sweeper.Run(ctx, sweeper.Options{})
		w.sweeping = false
		w.stats.Repairs += rep.Repaired
		w.logf("sweeper %s: %d examined, %d deleted, %d nudged, %d repaired, %d errors (%v)", inv.id, rep.Examined, rep.Deleted, rep.Nudged, rep.Repaired, rep.Errors, err)
		if err != nil && !faulty && !w.faulty {
			w.violate("the sweeper failed without faults: %v", err)
		}
	})
}
