package jobs

import (
	"errors"
	"fmt"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// This file is the state machine. Both stores call decide and nothing else
// to choose a transition, so they cannot drift: the memory store evaluates
// it under its lock on the current item; the DynamoDB store evaluates it on
// an expected item, writes, and on a failed condition evaluates it again on
// the old item DynamoDB returned (ReturnValuesOnConditionCheckFailure).

// guard is the condition of a write: the item is at exactly (status,
// generation, version), a fenced write's caller holds the lease, a claim
// naming a tenant finds the job of that tenant, and, for a takeover, the
// lease ended before expiredBefore. Every write bumps the version, so the guard pins the whole
// item: anything decide read from it is still true when the write lands.
type guard struct {
	status        Status
	generation    int64
	version       int64
	owner         string    // empty: no owner condition
	tenant        string    // empty: no tenant condition
	expiredBefore time.Time // zero: no lease condition
}

func (g guard) holds(j *Job) bool {
	if j == nil || j.Status != g.status || j.Generation != g.generation || j.Version != g.version {
		return false
	}
	if g.owner != "" && j.LeaseOwner != g.owner {
		return false
	}
	if g.tenant != "" && j.Tenant != g.tenant {
		return false
	}
	if !g.expiredBefore.IsZero() {
		// A missing lease attribute fails "<" in DynamoDB too.
		return !j.LeaseExpiresAt.IsZero() && j.LeaseExpiresAt.UnixMilli() < g.expiredBefore.UnixMilli()
	}
	return true
}

// patch is what a write sets. Nil fields are left alone.
type patch struct {
	status         Status
	generation     int64
	version        int64
	leaseOwner     *string
	leaseExpiresAt *time.Time
	result         *Result
	progress       *int64
	failure        *Failure
	expiresAt      *time.Time
	outbox         Message
	updatedAt      time.Time
}

func (p *patch) apply(j Job) Job {
	j.Status, j.Generation, j.Version = p.status, p.generation, p.version
	if p.leaseOwner != nil {
		j.LeaseOwner = *p.leaseOwner
	}
	if p.leaseExpiresAt != nil {
		j.LeaseExpiresAt = *p.leaseExpiresAt
	}
	if p.result != nil {
		j.Result = *p.result
	}
	if p.progress != nil {
		j.Progress = *p.progress
	}
	if p.failure != nil {
		j.Error = *p.failure
	}
	if p.expiresAt != nil {
		j.ExpiresAt = *p.expiresAt
	}
	j.Outbox = p.outbox
	j.UpdatedAt = p.updatedAt
	j.History = appendHistory(j.History, p.entry())
	return j
}

// entry is the History entry of the write.
func (p *patch) entry() Transition {
	return Transition{Version: p.version, Status: p.status, Generation: p.generation, At: p.updatedAt, Event: p.outbox.Type}
}

// appendHistory is h with t after it, its last MaxHistory entries: what
// the item's slots hold after t's write (jobitem.HistorySlot). It does not
// share h's array, so a clone of the job before keeps its own.
func appendHistory(h []Transition, t Transition) []Transition {
	return append(h[len(h)-min(len(h), MaxHistory-1):len(h):len(h)], t)
}

// step is decide's answer.
type step struct {
	// done: nothing to write, the current item already is the outcome (the
	// caller's own earlier write, recognised on a retry, or an idempotent
	// cancel).
	done  bool
	guard guard
	patch patch
	// after is returned with the item once the write has landed, or with
	// the item that already is the outcome: a claim that fails the job under
	// the recovery policy (and its retry) reports ErrFinal.
	after error
}

// request is one of the transition requests.
type request interface {
	jobID() string
	describe() string // the operation, for error messages: "accept job-42 g2"
	// expect is the item the first write assumes without reading: the
	// caller's own generation and version for a fenced write, a fresh
	// pending job for a claim or a cancel.
	expect() *Job
	validate(now time.Time, cfg *config) error
}

func (r *ClaimRequest) jobID() string  { return r.JobID }
func (r *RenewRequest) jobID() string  { return r.JobID }
func (r *AcceptRequest) jobID() string { return r.JobID }
func (r *FailRequest) jobID() string   { return r.JobID }
func (r *CancelRequest) jobID() string { return r.JobID }
func (r *NudgeRequest) jobID() string  { return r.JobID }

func (r *ClaimRequest) describe() string { return fmt.Sprintf("claim %s as %s", r.JobID, r.AttemptID) }
func (r *RenewRequest) describe() string { return fmt.Sprintf("renew %s g%d", r.JobID, r.Generation) }
func (r *AcceptRequest) describe() string {
	return fmt.Sprintf("accept %s g%d", r.JobID, r.Generation)
}
func (r *FailRequest) describe() string   { return fmt.Sprintf("fail %s g%d", r.JobID, r.Generation) }
func (r *CancelRequest) describe() string { return "cancel " + r.JobID }
func (r *NudgeRequest) describe() string {
	return fmt.Sprintf("nudge %s g%d v%d", r.JobID, r.Generation, r.Version)
}

func (r *ClaimRequest) expect() *Job {
	return &Job{ID: r.JobID, Status: StatusPending, Tenant: r.Tenant}
}
func (r *CancelRequest) expect() *Job { return &Job{ID: r.JobID, Status: StatusPending} }
func (r *RenewRequest) expect() *Job  { return fenced(r.JobID, r.Generation, r.Version, r.AttemptID) }
func (r *AcceptRequest) expect() *Job { return fenced(r.JobID, r.Generation, r.Version, r.AttemptID) }
func (r *FailRequest) expect() *Job   { return fenced(r.JobID, r.Generation, r.Version, r.AttemptID) }

// expect of a nudge is the job as the caller read it. Only a pending job is
// at generation 0 (a claim raises the generation as it starts the job, and
// the other writes that raise it end the job), so the generation tells the
// status; a running job is expected on a lease that has ended, which the
// write's condition checks against the store's now.
func (r *NudgeRequest) expect() *Job {
	if r.Generation == 0 {
		return &Job{ID: r.JobID, Status: StatusPending, Version: r.Version}
	}
	return &Job{ID: r.JobID, Status: StatusRunning, Generation: r.Generation, Version: r.Version,
		LeaseExpiresAt: time.UnixMilli(0).UTC()}
}

func fenced(id string, g, v int64, attempt string) *Job {
	return &Job{ID: id, Status: StatusRunning, Generation: g, Version: v, LeaseOwner: attempt}
}

// decide is the whole state machine: given the request, the item as it is
// (nil when there is none) and the time, it returns the write to make, or
// that the item already is the outcome, or the error that says why the
// transition is refused. It is pure, and so is each decide* function it
// hands a request to: one per transition.
func decide(req request, cur *Job, now time.Time, cfg *config) (step, error) {
	now = ms(now)
	switch r := req.(type) {
	case *ClaimRequest:
		return decideClaim(r, cur, now, cfg)
	case *RenewRequest:
		return decideRenew(r, cur, now)
	case *AcceptRequest:
		return decideAccept(r, cur, now, cfg)
	case *FailRequest:
		return decideFail(r, cur, now, cfg)
	case *CancelRequest:
		return decideCancel(r, cur, now, cfg)
	case *NudgeRequest:
		return decideNudge(r, cur, now)
	}
	panic(fmt.Sprintf("jobs: decide: unknown request %T", req))
}

// runRounds drives a store's transition: it runs decide on the item,
// starting from what the request expects, and hands each planned write to
// write, which applies it or, when the store refuses the guard, returns
// errConditionFailed and the item it refused (nil: none), on which decide
// runs again, at most maxRounds times. A refused item on which the guard
// still holds goes to stillHolds: an error to return, or nil to go on
// (PostgresStore: the item was the statement's older snapshot).
func runRounds(req request, cfg *config, write func(st *step, now time.Time) (Job, *Job, error), stillHolds func(old *Job) error) (Job, error) {
	now := cfg.now()
	if err := req.validate(now, cfg); err != nil {
		return Job{}, transitionError(req, err)
	}
	cur := req.expect()
	for range maxRounds {
		st, err := decide(req, cur, now, cfg)
		if err != nil {
			return Job{}, transitionError(req, err)
		}
		if st.done {
			return *cur, transitionError(req, st.after)
		}
		next, old, err := write(&st, now)
		if err == nil {
			return next, transitionError(req, st.after)
		}
		if !errors.Is(err, errConditionFailed) {
			return Job{}, transitionError(req, err)
		}
		if st.guard.holds(old) {
			if err := stillHolds(old); err != nil {
				return Job{}, transitionError(req, err)
			}
		}
		cur = old
	}
	return Job{}, transitionError(req, errors.New("the item kept changing; giving up"))
}

func decideRenew(r *RenewRequest, cur *Job, now time.Time) (step, error) {
	// Our own renewal is the one whose event is at the next version: a
	// nudge also keeps the job running at the generation, the holder and
	// its lease, and must not pass for it.
	if cur != nil && cur.Status == StatusRunning && cur.Generation == r.Generation &&
		cur.Version == r.Version+1 && cur.LeaseOwner == r.AttemptID &&
		cur.LeaseExpiresAt.Equal(ms(r.LeaseUntil)) && cur.Progress == r.Progress &&
		cur.Outbox.Type == EventProgress && cur.Outbox.Payload[PayloadAttemptID] == r.AttemptID {
		return step{done: true}, nil
	}
	if err := refuseFenced(cur, r.Generation, r.Version, r.AttemptID); err != nil {
		return step{}, err
	}
	until, progress := ms(r.LeaseUntil), r.Progress
	return step{
		guard: fencedGuard(r.Generation, r.Version, r.AttemptID),
		patch: patch{
			status: StatusRunning, generation: r.Generation, version: r.Version + 1,
			leaseExpiresAt: &until, progress: &progress, updatedAt: now,
			outbox: message(r.JobID, r.Version+1, EventProgress, PayloadAttemptID, r.AttemptID),
		},
	}, nil
}

func decideAccept(r *AcceptRequest, cur *Job, now time.Time, cfg *config) (step, error) {
	if cur != nil && cur.Status == StatusCompleted && cur.Generation == r.Generation &&
		cur.Version == r.Version+1 && cur.LeaseOwner == r.AttemptID &&
		cur.Result == r.Result && cur.Progress == r.Progress {
		return step{done: true}, nil
	}
	if err := refuseFenced(cur, r.Generation, r.Version, r.AttemptID); err != nil {
		return step{}, err
	}
	result, progress, expires := r.Result, r.Progress, ttl(now.Add(cfg.retention))
	return step{
		guard: fencedGuard(r.Generation, r.Version, r.AttemptID),
		patch: patch{
			status: StatusCompleted, generation: r.Generation, version: r.Version + 1,
			result: &result, progress: &progress, expiresAt: &expires, updatedAt: now,
			// No payload: the attempt and the result key are the item's
			// lease_owner and result_key already, which the relay's event
			// and a retry's check read; a copy would cost the accept a
			// second write unit (itemsize_internal_test.go).
			outbox: message(r.JobID, r.Version+1, EventCompleted),
		},
	}, nil
}

func decideFail(r *FailRequest, cur *Job, now time.Time, cfg *config) (step, error) {
	if cur != nil && cur.Status == StatusFailed && cur.Generation == r.Generation &&
		cur.Version == r.Version+1 && cur.LeaseOwner == r.AttemptID && cur.Error == r.Failure {
		return step{done: true}, nil
	}
	if err := refuseFenced(cur, r.Generation, r.Version, r.AttemptID); err != nil {
		return step{}, err
	}
	failure, expires := r.Failure, ttl(now.Add(cfg.retention))
	return step{
		guard: fencedGuard(r.Generation, r.Version, r.AttemptID),
		patch: patch{
			status: StatusFailed, generation: r.Generation, version: r.Version + 1,
			failure: &failure, expiresAt: &expires, updatedAt: now,
			outbox: message(r.JobID, r.Version+1, EventFailed,
				PayloadAttemptID, r.AttemptID, PayloadCode, r.Failure.Code),
		},
	}, nil
}

func decideCancel(r *CancelRequest, cur *Job, now time.Time, cfg *config) (step, error) {
	switch {
	case cur == nil:
		return step{}, ErrNotFound
	case cur.Status == StatusCancelled && !r.Strict:
		return step{done: true}, nil
	case cur.Status.Final():
		return step{}, &FinalError{Status: cur.Status, Failure: cur.Error}
	}
	failure, expires := Failure{Code: CodeCancelled, Message: r.Reason}, ttl(now.Add(cfg.retention))
	var payload []string
	if r.Reason != "" {
		payload = []string{PayloadReason, r.Reason}
	}
	return step{
		guard: guard{status: cur.Status, generation: cur.Generation, version: cur.Version},
		patch: patch{
			// The generation moves on: a worker still running is fenced.
			status: StatusCancelled, generation: cur.Generation + 1, version: cur.Version + 1,
			failure: &failure, expiresAt: &expires, updatedAt: now,
			outbox: message(r.JobID, cur.Version+1, EventCancelled, payload...),
		},
	}, nil
}

// decideNudge re-issues the run command of a pending job, or of a running
// one whose lease ended strictly before now, at the generation and version
// the caller read. The generation stays: the claim the command leads to
// raises it, so the recovery policy still counts every generation. The
// version rises, which fences whatever ran under the ended lease as a
// takeover would (its invocation ended at its deadline; only requests in
// flight could still arrive).
func decideNudge(r *NudgeRequest, cur *Job, now time.Time) (step, error) {
	switch {
	case cur == nil:
		return step{}, ErrNotFound
	case nudgedBy(cur, r):
		// Our own nudge, applied by an earlier try whose response was lost.
		return step{done: true}, nil
	case cur.Generation != r.Generation || cur.Version != r.Version:
		return step{}, &StaleError{Generation: cur.Generation, Version: cur.Version, Status: cur.Status}
	case cur.Status.Final():
		return step{}, &FinalError{Status: cur.Status, Failure: cur.Error}
	case cur.Status == StatusRunning && cur.LeaseExpiresAt.UnixMilli() >= now.UnixMilli():
		return step{}, &LeaseHeldError{Owner: cur.LeaseOwner, Generation: cur.Generation, Until: cur.LeaseExpiresAt}
	}
	g := guard{status: cur.Status, generation: cur.Generation, version: cur.Version}
	if cur.Status == StatusRunning {
		g.expiredBefore = now
	}
	var payload []string
	if r.Reason != "" {
		payload = []string{PayloadReason, r.Reason}
	}
	return step{
		guard: g,
		patch: patch{
			status: cur.Status, generation: cur.Generation, version: cur.Version + 1, updatedAt: now,
			outbox: message(r.JobID, cur.Version+1, MessageRun, payload...),
		},
	}, nil
}

// nudgedBy reports whether cur is what r's nudge wrote: still live, at the
// generation it read and the next version, with the run command it would
// have written. (Two sweepers nudging the same read alike are told both
// that they succeeded: there is one write and one command either way.)
func nudgedBy(cur *Job, r *NudgeRequest) bool {
	return !cur.Status.Final() && cur.Generation == r.Generation && cur.Version == r.Version+1 &&
		cur.Outbox.Type == MessageRun && cur.Outbox.Payload[PayloadReason] == r.Reason
}

// decideClaim grants the next generation, or recognises the caller's own
// claim. An attempt's own claim is recognised only while its lease is live:
// once the lease has ended the attempt holds nothing any other claimer does
// not, so its claim is a takeover like theirs (a new generation, or the
// failure of the job under the recovery policy), never an answer that it
// still holds a lease that is over.
func decideClaim(r *ClaimRequest, cur *Job, now time.Time, cfg *config) (step, error) {
	switch {
	case cur == nil:
		return step{}, ErrNotFound
	case r.Tenant != "" && cur.Tenant != r.Tenant:
		// Another tenant's job is no job of the caller's: the same answer
		// as a missing one, before anything else about it is told.
		return step{}, ErrNotFound
	case exhaustedBy(cur, r.AttemptID):
		// Our own claim failed the job under the recovery policy, applied by
		// an earlier try whose response was lost: the same answer again.
		return step{done: true, after: &FinalError{Status: cur.Status, Failure: cur.Error}}, nil
	case cur.Status.Final():
		return step{}, &FinalError{Status: cur.Status, Failure: cur.Error}
	case cur.Status == StatusRunning && cur.LeaseExpiresAt.UnixMilli() >= now.UnixMilli():
		if cur.LeaseOwner == r.AttemptID {
			// Our own claim, applied by an earlier try whose response was
			// lost, and its lease is live.
			return step{done: true}, nil
		}
		return step{}, &LeaseHeldError{Owner: cur.LeaseOwner, Generation: cur.Generation, Until: cur.LeaseExpiresAt}
	case cur.Status == StatusRunning && cur.Generation >= cfg.recovery.MaxGenerations:
		// The lease has ended, whoever held it (the caller too): a
		// takeover, and the last generation has been used.
		return exhaust(r, cur, now, cfg), nil
	}
	return startGeneration(r, cur, now), nil
}

// startGeneration grants the next generation to the claim: from pending, or as the
// takeover of a running job whose lease has ended.
func startGeneration(r *ClaimRequest, cur *Job, now time.Time) step {
	g := guard{status: cur.Status, generation: cur.Generation, version: cur.Version, tenant: r.Tenant}
	payload := []string{PayloadAttemptID, r.AttemptID}
	if cur.Status == StatusRunning {
		g.expiredBefore = now
		payload = append(payload, PayloadPreviousAttemptID, cur.LeaseOwner)
	}
	owner, until, progress := r.AttemptID, ms(r.LeaseUntil), int64(0)
	return step{
		guard: g,
		patch: patch{
			// Progress belongs to a generation: a takeover starts from zero.
			status: StatusRunning, generation: cur.Generation + 1, version: cur.Version + 1,
			leaseOwner: &owner, leaseExpiresAt: &until, progress: &progress, updatedAt: now,
			outbox: message(r.JobID, cur.Version+1, EventStarted, payload...),
		},
	}
}

// exhaust is the takeover beyond the recovery policy: the write fails the
// job, fencing the expired generation. Its event names the claim that made
// it (PayloadAttemptID), so a retry of that claim is recognised.
func exhaust(r *ClaimRequest, cur *Job, now time.Time, cfg *config) step {
	failure := Failure{Code: CodeRecoveryExhausted, Message: fmt.Sprintf(
		"lease of generation %d (attempt %s) expired; the recovery policy allows %d generations",
		cur.Generation, cur.LeaseOwner, cfg.recovery.MaxGenerations)}
	expires := ttl(now.Add(cfg.retention))
	return step{
		guard: guard{status: StatusRunning, generation: cur.Generation, version: cur.Version, tenant: r.Tenant, expiredBefore: now},
		patch: patch{
			status: StatusFailed, generation: cur.Generation + 1, version: cur.Version + 1,
			failure: &failure, expiresAt: &expires, updatedAt: now,
			outbox: message(r.JobID, cur.Version+1, EventFailed, PayloadAttemptID, r.AttemptID,
				PayloadCode, CodeRecoveryExhausted, PayloadPreviousAttemptID, cur.LeaseOwner),
		},
		after: &FinalError{Status: StatusFailed, Failure: failure},
	}
}

// exhaustedBy reports whether the job was failed by attempt's claim under
// the recovery policy. A final job never changes, so its outbox still holds
// that write's event.
func exhaustedBy(cur *Job, attempt string) bool {
	return cur.Status == StatusFailed && cur.Error.Code == CodeRecoveryExhausted &&
		cur.Outbox.Type == EventFailed && cur.Outbox.Payload[PayloadAttemptID] == attempt
}

// fencedGuard is the condition of renew, accept and fail: running at the
// caller's generation and version, and the caller holds the lease. (The
// version alone pins the holder; the owner makes a caller's mix-up of
// attempt ids a refusal rather than a write its retry could not recognise.)
func fencedGuard(g, v int64, attempt string) guard {
	return guard{status: StatusRunning, generation: g, version: v, owner: attempt}
}

// refuseFenced classifies a fenced write (renew, accept, fail) against the
// current item; nil means the guard holds.
func refuseFenced(cur *Job, g, v int64, attempt string) error {
	switch {
	case cur == nil:
		return ErrNotFound
	case cur.Generation != g:
		return &StaleError{Generation: cur.Generation, Version: cur.Version, Status: cur.Status}
	case cur.Status.Final():
		return &FinalError{Status: cur.Status, Failure: cur.Error}
	case cur.Status != StatusRunning || cur.Version != v || cur.LeaseOwner != attempt:
		return &StaleError{Generation: cur.Generation, Version: cur.Version, Status: cur.Status}
	}
	return nil
}

func message(jobID string, version int64, typ string, kv ...string) Message {
	m := Message{ID: OutboxID(jobID, version), Type: typ, Version: version}
	if len(kv) > 0 {
		m.Payload = make(map[string]string, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			m.Payload[kv[i]] = kv[i+1]
		}
	}
	return m
}

// intentMarker is the item that makes Create idempotent: keyed
// "intent#<tenant>#<intent id>", which no job id can equal ('#' is not
// allowed in job ids, nor in tenants, so the key is unambiguous). It has no
// outbox attribute, so the relay ignores it.
type intentMarker struct {
	Key        string
	Tenant     string
	IntentID   string
	JobID      string // the job the intent created
	SpecSHA256 string
	CreatedAt  time.Time
	ExpiresAt  time.Time
}

// IntentKey is the table key of the marker of an intent.
func IntentKey(tenant, intentID string) string {
	return jobitem.IntentKeyPrefix + tenant + "#" + intentID
}

// newJob is what Create writes when nothing is in its way, or only
// dangling: the intent's marker whose job is gone (resolveCreate's free),
// which the new job's marker writes over.
func newJob(req *CreateRequest, dangling *intentMarker, now time.Time, cfg *config) (Job, intentMarker) {
	now = ms(now)
	id := req.JobID
	switch {
	case id != "":
	case dangling != nil:
		id = SuccessorJobID(req.Tenant, req.IntentID, dangling.JobID)
	default:
		id = DeriveJobID(req.Tenant, req.IntentID)
	}
	var spec map[string]string
	if len(req.Spec) > 0 {
		spec = make(map[string]string, len(req.Spec))
		for k, v := range req.Spec {
			spec[k] = v
		}
	}
	j := Job{
		ID: id, IntentID: req.IntentID, Tenant: req.Tenant, Status: StatusPending,
		Spec: spec, CreatedAt: now, UpdatedAt: now,
		Outbox: message(id, 0, MessageRun),
	}
	j.History = []Transition{{Version: 0, Status: StatusPending, At: now, Event: MessageRun}}
	m := intentMarker{
		Key: IntentKey(req.Tenant, req.IntentID), Tenant: req.Tenant, IntentID: req.IntentID,
		JobID: id, SpecSHA256: specHash(req.Spec), CreatedAt: now, ExpiresAt: ttl(now.Add(cfg.intentRetention)),
	}
	return j, m
}

// resolveCreate decides a Create that found something in its way: the
// intent's marker m with the job it points to (nil when that item is gone),
// or (m nil) a job that already has the requested id.
//
// free reports that the marker is no obstacle after all: its job's item is
// gone, deleted under the table's TTL (DynamoDB deletes expired items days
// after they expire, in any order, so the marker may outlive its job), and
// the intent is free. The caller writes the new job over the marker, which
// is what happens once both items are deleted: the job item decides, never
// the order of the two deletions. The new job's id is then the successor
// of the marker's (newJob), never the id of the job that is gone.
func resolveCreate(req *CreateRequest, m *intentMarker, existing *Job) (res CreateResult, free bool, err error) {
	hash := specHash(req.Spec)
	if m != nil {
		if m.Tenant != req.Tenant || m.IntentID != req.IntentID {
			return CreateResult{}, false, fmt.Errorf("intent marker %q belongs to tenant %q intent %q", m.Key, m.Tenant, m.IntentID)
		}
		if existing == nil {
			return CreateResult{}, true, nil
		}
		if m.SpecSHA256 != hash {
			return CreateResult{}, false, ErrIntentConflict
		}
		return CreateResult{Job: *existing, Existing: true}, false, nil
	}
	if existing == nil {
		return CreateResult{}, false, fmt.Errorf("resolveCreate: nothing in the way")
	}
	// No marker (it expired) but the id is taken: by the same intent, when
	// the id was derived from it.
	if existing.Tenant != req.Tenant || existing.IntentID != req.IntentID {
		return CreateResult{}, false, ErrJobExists
	}
	if specHash(existing.Spec) != hash {
		return CreateResult{}, false, ErrIntentConflict
	}
	return CreateResult{Job: *existing, Existing: true}, false, nil
}

// ttl truncates t to the precision of a TTL attribute: epoch seconds.
func ttl(t time.Time) time.Time { return time.Unix(t.Unix(), 0).UTC() }
