package jobstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// NewStore returns a fresh store configured with opts (always including a
// clock). Stores returned to different tests may share a table: the suite
// uses ids and tenants unique to each test.
type NewStore func(t *testing.T, opts ...jobs.Option) jobs.Store

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore)
		})
	}
}

var suite = []struct {
	name string
	run  func(t *testing.T, newStore NewStore)
}{
	{"CreateIsIdempotentPerIntent", testCreateIsIdempotentPerIntent},
	{"CreateDerivesTheJobIDFromTheIntent", testCreateDerivesJobID},
	{"CreateRefusesATakenJobID", testCreateRefusesTakenJobID},
	{"CreateRejectsInvalidRequests", testCreateRejectsInvalid},
	{"ConcurrentCreatesOfOneIntentMakeOneJob", testConcurrentCreates},
	{"CreateAfterTheIntentsJobExpired", testCreateAfterTheIntentsJobExpired},
	{"ConcurrentCreatesAfterTheJobExpiredMakeOneJob", testConcurrentCreatesAfterTheJobExpired},
	{"ConcurrentCreatesWithTheirOwnIDsAfterTheJobExpiredMakeOneJob", testConcurrentCreatesWithTheirOwnIDsAfterTheJobExpired},
	{"ThirdIncarnationOfAnIntentHasItsOwnID", testThirdIncarnationOfAnIntent},
	{"ClaimStartsGenerationOne", testClaimStartsGenerationOne},
	{"DuplicateClaimDoesNotDisplaceALiveLease", testDuplicateClaim},
	{"RetriedWritesRecogniseTheirOwnSuccess", testRetriedWritesRecognised},
	{"OwnClaimAfterItsLeaseEndedIsATakeover", testOwnClaimAfterLeaseEnded},
	{"ClaimNamingAnotherTenantFindsNoJob", testClaimOfAnotherTenant},
	{"AcceptTakesOnlyTheAttemptsOwnCandidateKey", testAcceptOwnKeyOnly},
	{"RunningExample", testRunningExample},
	{"FencedWritesCheckTheVersion", testFencedWritesCheckVersion},
	{"RenewExtendsTheLeaseAndRecordsProgress", testRenew},
	{"LeasesAreBoundedByLambdasMaximumPlusTheSkewMargin", testLeasesAreBounded},
	{"AcceptAfterExpiryWithoutTakeover", testAcceptAfterExpiry},
	{"FailEndsTheJob", testFail},
	{"CancelFencesTheRunningWorker", testCancelFences},
	{"CancelIsIdempotentAndRefusesEndedJobs", testCancelIdempotent},
	{"RecoveryPolicyFailsTheJobAfterMaxGenerations", testRecoveryPolicy},
	{"MissingJob", testMissingJob},
	{"InvalidRequests", testInvalidRequests},
	{"ConcurrentClaimsElectOneHolder", testConcurrentClaims},
	{"NudgeReissuesTheCommandOfAPendingJob", testNudgePending},
	{"NudgeRunningJobOnlyAfterItsLeaseEnded", testNudgeRunning},
	{"NudgeLeavesTheRecoveryPolicyInCharge", testNudgeKeepsRecoveryPolicy},
	{"NudgeRefusals", testNudgeRefusals},
	{"LiveListsJobsThatAreNotFinalByLastUpdate", testLive},
	{"FinishedListsFinalJobsByTheirFinalTransition", testFinished},
	{"GetManyReadsEachJobOnce", testGetMany},
	{"HistoryIsLinearizable", testHistoryIsLinearizable},
}

// bundle is what a test works with.
type bundle struct {
	store  jobs.Store
	clock  *Clock
	ctx    context.Context
	tenant string
	suffix string
}

func setup(t *testing.T, newStore NewStore, opts ...jobs.Option) *bundle {
	t.Helper()
	return setupAt(t, Start, newStore, opts...)
}

// setupAt is setup with a clock showing start.
func setupAt(t *testing.T, start time.Time, newStore NewStore, opts ...jobs.Option) *bundle {
	t.Helper()
	clock := NewClock(start)
	suffix := randomHex(t)
	return &bundle{
		store:  newStore(t, append([]jobs.Option{jobs.WithClock(clock.Now)}, opts...)...),
		clock:  clock,
		ctx:    t.Context(),
		tenant: "t-1-" + suffix,
		suffix: suffix,
	}
}

func randomHex(t testing.TB) string {
	var b [4]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return hex.EncodeToString(b[:])
}

// id returns a job id unique to the test, e.g. "job-42-1a2b3c4d".
func (b *bundle) id(name string) string { return name + "-" + b.suffix }

// create creates a pending job.
func (b *bundle) create(t *testing.T, name string) jobs.Job {
	t.Helper()
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{
		JobID: b.id(name), IntentID: "intent-" + name, Tenant: b.tenant,
		Spec: map[string]string{"source": "articles"},
	})
	require.NoError(t, err)
	require.False(t, res.Existing)
	return res.Job
}

// claim claims id for attempt with a lease of d from now.
func (b *bundle) claim(t *testing.T, id, attempt string, d time.Duration) jobs.Job {
	t.Helper()
	j, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: attempt, LeaseUntil: b.clock.Now().Add(d)})
	require.NoError(t, err)
	return j
}

func (b *bundle) get(t *testing.T, id string) jobs.Job {
	t.Helper()
	j, err := b.store.Get(b.ctx, id)
	require.NoError(t, err)
	return j
}

// requireUnchanged fails unless the job is exactly as before: no write
// landed, so nothing is published either.
func (b *bundle) requireUnchanged(t *testing.T, before jobs.Job) {
	t.Helper()
	require.Equal(t, before, b.get(t, before.ID), "a refused write changed the job")
}

// result is a result of attempt in generation g of job id, under the
// attempt's own candidate key (jobs.ValidateResultKey).
func result(id, attempt string, g int64) jobs.Result {
	return jobs.Result{
		Key:    fmt.Sprintf("candidates/%s/g%010d/%s.json", id, g, attempt),
		SHA256: strings.Repeat("ab", 32),
		Size:   1234,
	}
}

func ms(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

func testCreateIsIdempotentPerIntent(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	req := jobs.CreateRequest{
		JobID: b.id("job-42"), IntentID: "export-intent-7", Tenant: b.tenant,
		Spec: map[string]string{"source": "articles", "format": "json"},
	}
	first, err := b.store.Create(b.ctx, req)
	require.NoError(t, err)
	require.False(t, first.Existing)
	j := first.Job
	require.Equal(t, req.JobID, j.ID)
	require.Equal(t, "export-intent-7", j.IntentID)
	require.Equal(t, b.tenant, j.Tenant)
	require.Equal(t, jobs.StatusPending, j.Status)
	require.Zero(t, j.Generation)
	require.Zero(t, j.Version)
	require.Equal(t, req.Spec, j.Spec)
	require.Equal(t, jobs.Message{ID: req.JobID + "/v0", Type: jobs.MessageRun}, j.Outbox)
	require.Equal(t, ms(Start), j.CreatedAt)
	require.Equal(t, ms(Start), j.UpdatedAt)
	require.True(t, j.ExpiresAt.IsZero(), "a live job has no TTL")
	require.Equal(t, j, b.get(t, j.ID))

	// The same intent again, with a new proposed id: the same job, nothing written.
	b.clock.Advance(time.Minute)
	again := req
	again.JobID = b.id("job-43")
	second, err := b.store.Create(b.ctx, again)
	require.NoError(t, err)
	require.True(t, second.Existing)
	require.Equal(t, j, second.Job)
	b.requireUnchanged(t, j)
	_, err = b.store.Get(b.ctx, again.JobID)
	require.ErrorIs(t, err, jobs.ErrNotFound)

	// Still the same job after it moved on.
	claimed := b.claim(t, j.ID, "attempt-a", time.Minute)
	third, err := b.store.Create(b.ctx, req)
	require.NoError(t, err)
	require.True(t, third.Existing)
	require.Equal(t, claimed, third.Job)

	// The same intent with another spec is a conflict, and writes nothing.
	other := req
	other.Spec = map[string]string{"source": "articles", "format": "csv"}
	_, err = b.store.Create(b.ctx, other)
	require.ErrorIs(t, err, jobs.ErrIntentConflict)
	b.requireUnchanged(t, claimed)

	// The same intent id of another tenant is another intent.
	foreign := req
	foreign.Tenant = b.tenant + "-other"
	foreign.JobID = b.id("job-44")
	res, err := b.store.Create(b.ctx, foreign)
	require.NoError(t, err)
	require.False(t, res.Existing)
	require.Equal(t, foreign.JobID, res.Job.ID)
}

func testCreateDerivesJobID(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	req := jobs.CreateRequest{IntentID: "export-intent-7", Tenant: b.tenant}
	first, err := b.store.Create(b.ctx, req)
	require.NoError(t, err)
	require.Equal(t, jobs.DeriveJobID(b.tenant, "export-intent-7"), first.Job.ID)
	require.NoError(t, jobs.ValidateID(first.Job.ID))
	require.Nil(t, first.Job.Spec)

	// An empty spec is the same spec as none.
	req.Spec = map[string]string{}
	second, err := b.store.Create(b.ctx, req)
	require.NoError(t, err)
	require.True(t, second.Existing)
	require.Equal(t, first.Job, second.Job)
}

func testCreateRefusesTakenJobID(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	j := b.create(t, "job-42")
	_, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: j.ID, IntentID: "another-intent", Tenant: b.tenant})
	require.ErrorIs(t, err, jobs.ErrJobExists)
	b.requireUnchanged(t, j)
	// The refused intent left no marker behind: with a free id it creates.
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: b.id("job-43"), IntentID: "another-intent", Tenant: b.tenant})
	require.NoError(t, err)
	require.False(t, res.Existing)
}

func testCreateRejectsInvalid(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	for _, req := range []jobs.CreateRequest{
		{JobID: "job 42", IntentID: "i", Tenant: b.tenant},
		{JobID: "job#42", IntentID: "i", Tenant: b.tenant},
		{JobID: strings.Repeat("j", 129), IntentID: "i", Tenant: b.tenant},
		{JobID: b.id("job-1"), IntentID: "", Tenant: b.tenant},
		{JobID: b.id("job-2"), IntentID: "i", Tenant: ""},
		{JobID: b.id("job-3"), IntentID: "i", Tenant: "t#1"},
		{JobID: b.id("job-4"), IntentID: "a\nb", Tenant: b.tenant},
		{JobID: b.id("job-5"), IntentID: "i", Tenant: b.tenant, Spec: map[string]string{"": "x"}},
	} {
		_, err := b.store.Create(b.ctx, req)
		require.ErrorIs(t, err, jobs.ErrInvalid, "%+v", req)
		if req.JobID != "" && jobs.ValidateID(req.JobID) == nil {
			_, err = b.store.Get(b.ctx, req.JobID)
			require.ErrorIs(t, err, jobs.ErrNotFound)
		}
	}
	// The longest valid id works.
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: strings.Repeat("j", 120) + b.suffix, IntentID: "i", Tenant: b.tenant})
	require.NoError(t, err)
	require.Len(t, res.Job.ID, 128)
}

func testConcurrentCreates(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.createConcurrently(t, "export-intent-7")
}

// createConcurrently sends 8 concurrent creates of intent, each proposing
// its own id, as an intake with random ids would, and checks that they
// return one job, written by exactly one of them, and that no other
// proposed id has a job. It returns that job.
func (b *bundle) createConcurrently(t *testing.T, intent string) jobs.Job {
	t.Helper()
	j := b.raceCreates(t, func(i int) jobs.CreateRequest {
		return jobs.CreateRequest{JobID: b.id(fmt.Sprintf("job-%d", i)), IntentID: intent, Tenant: b.tenant}
	})
	for i := range raceWidth {
		if id := b.id(fmt.Sprintf("job-%d", i)); id != j.ID {
			_, err := b.store.Get(b.ctx, id)
			require.ErrorIs(t, err, jobs.ErrNotFound)
		}
	}
	return j
}

const raceWidth = 8

// raceCreates sends raceWidth concurrent creates, the i-th req(i), and
// checks that they return one job, written by exactly one of them. It
// returns that job.
func (b *bundle) raceCreates(t *testing.T, req func(i int) jobs.CreateRequest) jobs.Job {
	t.Helper()
	results := make([]jobs.CreateResult, raceWidth)
	errs := make([]error, raceWidth)
	var wg sync.WaitGroup
	for i := range raceWidth {
		wg.Go(func() { results[i], errs[i] = b.store.Create(b.ctx, req(i)) })
	}
	wg.Wait()
	created := 0
	for i := range raceWidth {
		require.NoError(t, errs[i])
		require.Equal(t, results[0].Job, results[i].Job)
		if !results[i].Existing {
			created++
		}
	}
	require.Equal(t, 1, created, "exactly one create writes the job and its command")
	return results[0].Job
}

func testClaimStartsGenerationOne(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	created := b.create(t, "job-42")
	b.clock.Advance(time.Second)
	until := b.clock.Now().Add(15*time.Minute + 5*time.Second + 123*time.Microsecond)
	j, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: created.ID, AttemptID: "attempt-a", LeaseUntil: until})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusRunning, j.Status)
	require.Equal(t, int64(1), j.Generation)
	require.Equal(t, int64(1), j.Version)
	require.Equal(t, "attempt-a", j.LeaseOwner)
	require.Equal(t, ms(until), j.LeaseExpiresAt, "leases are stored in epoch milliseconds")
	require.Zero(t, j.Progress)
	require.Equal(t, jobs.Message{
		ID: created.ID + "/v1", Type: jobs.EventStarted, Version: 1,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-a"},
	}, j.Outbox)
	require.Equal(t, created.CreatedAt, j.CreatedAt)
	require.Equal(t, ms(b.clock.Now()), j.UpdatedAt)
	require.Equal(t, created.Spec, j.Spec)
	require.Equal(t, j, b.get(t, j.ID))
}

func testDuplicateClaim(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	a := b.claim(t, id, "attempt-a", time.Minute)

	// A duplicate message, up to and including the last millisecond of the lease.
	for _, at := range []time.Duration{0, 30 * time.Second, time.Minute} {
		b.clock.Set(Start.Add(at))
		_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
		require.ErrorIs(t, err, jobs.ErrLeaseHeld)
		var held *jobs.LeaseHeldError
		require.ErrorAs(t, err, &held)
		require.Equal(t, "attempt-a", held.Owner)
		require.Equal(t, int64(1), held.Generation)
		require.Equal(t, a.LeaseExpiresAt, held.Until)
		require.Contains(t, err.Error(), id)
		b.requireUnchanged(t, a)
	}

	// One millisecond later the lease has expired: a takeover.
	b.clock.Set(a.LeaseExpiresAt.Add(time.Millisecond))
	j := b.claim(t, id, "attempt-b", time.Minute)
	require.Equal(t, int64(2), j.Generation)
	require.Equal(t, int64(2), j.Version)
	require.Equal(t, "attempt-b", j.LeaseOwner)
	require.Equal(t, jobs.Message{
		ID: id + "/v2", Type: jobs.EventStarted, Version: 2,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-b", jobs.PayloadPreviousAttemptID: "attempt-a"},
	}, j.Outbox)
}

func testRetriedWritesRecognised(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	claim := jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(time.Minute)}
	first, err := b.store.Claim(b.ctx, claim)
	require.NoError(t, err)
	// The same claim again, as after a lost response: our own generation back, nothing written.
	again, err := b.store.Claim(b.ctx, claim)
	require.NoError(t, err)
	require.Equal(t, first, again)
	b.requireUnchanged(t, first)

	renew := jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 1,
		LeaseUntil: b.clock.Now().Add(2 * time.Minute), Progress: 50}
	renewed, err := b.store.Renew(b.ctx, renew)
	require.NoError(t, err)
	again, err = b.store.Renew(b.ctx, renew)
	require.NoError(t, err)
	require.Equal(t, renewed, again)
	// Not the same renewal: stale, not recognised.
	other := renew
	other.Progress = 60
	_, err = b.store.Renew(b.ctx, other)
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)

	accept := jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 2,
		Result: result(id, "attempt-a", 1), Progress: 120}
	accepted, err := b.store.Accept(b.ctx, accept)
	require.NoError(t, err)
	again, err = b.store.Accept(b.ctx, accept)
	require.NoError(t, err)
	require.Equal(t, accepted, again)
	b.requireUnchanged(t, accepted)
	// Another result of the same generation is not ours: refused.
	otherAccept := accept
	otherAccept.Result.Key = strings.TrimSuffix(otherAccept.Result.Key, ".json") + ".csv"
	_, err = b.store.Accept(b.ctx, otherAccept)
	require.ErrorIs(t, err, jobs.ErrFinal)

	// Fail, on another job.
	id2 := b.create(t, "job-43").ID
	b.claim(t, id2, "attempt-c", time.Minute)
	fail := jobs.FailRequest{JobID: id2, AttemptID: "attempt-c", Generation: 1, Version: 1,
		Failure: jobs.Failure{Code: "source_gone", Message: "the source returned 410"}}
	failed, err := b.store.Fail(b.ctx, fail)
	require.NoError(t, err)
	again, err = b.store.Fail(b.ctx, fail)
	require.NoError(t, err)
	require.Equal(t, failed, again)
	fail.AttemptID = "attempt-d"
	_, err = b.store.Fail(b.ctx, fail)
	require.ErrorIs(t, err, jobs.ErrFinal)
}

// testClaimOfAnotherTenant: a claim naming a tenant is conditional on it.
// A claim naming another tenant than the job's is ErrNotFound, whatever the
// job's state (pending, running on a live or an ended lease, at the last
// generation, final), and writes nothing: no generation is used up and no
// lease is taken. The right tenant's claim, and its retry, behave as ever.
func testClaimOfAnotherTenant(t *testing.T, newStore NewStore) {
	b := setup(t, newStore, jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: 2}))
	id := b.create(t, "job-42").ID
	forge := func(t *testing.T, attempt string) {
		t.Helper()
		before := b.get(t, id)
		_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: attempt,
			LeaseUntil: b.clock.Now().Add(time.Minute), Tenant: b.tenant + "-forged"})
		require.ErrorIs(t, err, jobs.ErrNotFound)
		require.False(t, errors.Is(err, jobs.ErrFinal) || errors.Is(err, jobs.ErrLeaseHeld), "a forged claim learns nothing: %v", err)
		b.requireUnchanged(t, before)
	}
	claim := func(attempt string) jobs.ClaimRequest {
		return jobs.ClaimRequest{JobID: id, AttemptID: attempt, LeaseUntil: b.clock.Now().Add(time.Minute), Tenant: b.tenant}
	}

	forge(t, "attempt-x") // pending
	pending := b.get(t, id)
	require.Equal(t, jobs.StatusPending, pending.Status)
	require.Zero(t, pending.Generation)
	require.Zero(t, pending.Version)

	req := claim("attempt-a")
	first, err := b.store.Claim(b.ctx, req)
	require.NoError(t, err)
	require.Equal(t, int64(1), first.Generation)
	again, err := b.store.Claim(b.ctx, req) // a retry after a lost response
	require.NoError(t, err)
	require.Equal(t, first, again)
	forge(t, "attempt-a") // the holder's own attempt id, another tenant
	forge(t, "attempt-x") // live lease

	b.clock.Set(first.LeaseExpiresAt.Add(time.Millisecond))
	forge(t, "attempt-x") // ended lease: no takeover
	second, err := b.store.Claim(b.ctx, claim("attempt-b"))
	require.NoError(t, err)
	require.Equal(t, int64(2), second.Generation)

	b.clock.Set(second.LeaseExpiresAt.Add(time.Millisecond))
	forge(t, "attempt-x") // the last generation ended: the job is not failed either
	_, err = b.store.Claim(b.ctx, claim("attempt-c"))
	require.ErrorIs(t, err, jobs.ErrFinal, "the right tenant's takeover beyond the policy")
	forge(t, "attempt-c") // final

	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-d",
		LeaseUntil: b.clock.Now().Add(time.Minute), Tenant: "t\x00"})
	require.ErrorIs(t, err, jobs.ErrInvalid, "a tenant that is no tenant")
}

// testAcceptOwnKeyOnly: an accept's result key must be the caller's own
// candidate key, candidates/<job>/g<generation, 10 digits>/<attempt>.<ext>;
// any other is ErrInvalid and nothing is written.
func testAcceptOwnKeyOnly(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	other := b.create(t, "job-43").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	accept := func(key string) error {
		r := result(id, "attempt-a", 1)
		r.Key = key
		_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
			Result: r, Progress: 1})
		return err
	}
	for name, key := range map[string]string{
		"another job's":          result(other, "attempt-a", 1).Key,
		"another generation's":   result(id, "attempt-a", 2).Key,
		"another attempt's":      result(id, "attempt-b", 1).Key,
		"a job id's prefix":      fmt.Sprintf("candidates/%s/g%010d/attempt-a.json", strings.TrimSuffix(id, id[len(id)-1:]), 1),
		"an unpadded generation": fmt.Sprintf("candidates/%s/g1/attempt-a.json", id),
		"no extension":           fmt.Sprintf("candidates/%s/g%010d/attempt-a", id, 1),
		"an upper-case ext":      fmt.Sprintf("candidates/%s/g%010d/attempt-a.JSON", id, 1),
		"a path in the ext":      fmt.Sprintf("candidates/%s/g%010d/attempt-a.json/x", id, 1),
		"another prefix":         fmt.Sprintf("results/%s/g%010d/attempt-a.json", id, 1),
		"empty":                  "",
	} {
		require.ErrorIs(t, accept(key), jobs.ErrInvalid, name)
		b.requireUnchanged(t, j)
	}
	require.NoError(t, accept(result(id, "attempt-a", 1).Key))
}

func testOwnClaimAfterLeaseEnded(t *testing.T, newStore NewStore) {
	b := setup(t, newStore, jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: 2}))
	id := b.create(t, "job-42").ID
	first := b.claim(t, id, "attempt-a", time.Minute)

	// While its lease is live, the attempt's claim with another lease end is
	// its own claim: recognised, and the lease is still the one granted.
	b.clock.Advance(30 * time.Second)
	again := b.claim(t, id, "attempt-a", 2*time.Minute)
	require.Equal(t, first, again)
	b.requireUnchanged(t, first)

	// Once the lease has ended, the same attempt holds nothing: its claim is
	// a takeover like anyone's, and it is never told it holds a lease that
	// is over.
	b.clock.Set(first.LeaseExpiresAt.Add(time.Millisecond))
	j := b.claim(t, id, "attempt-a", time.Minute)
	require.Equal(t, jobs.StatusRunning, j.Status)
	require.Equal(t, int64(2), j.Generation, "the ended generation is fenced")
	require.Equal(t, int64(2), j.Version)
	require.Equal(t, "attempt-a", j.LeaseOwner)
	require.Equal(t, ms(b.clock.Now().Add(time.Minute)), j.LeaseExpiresAt)
	require.Equal(t, jobs.Message{
		ID: id + "/v2", Type: jobs.EventStarted, Version: 2,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-a", jobs.PayloadPreviousAttemptID: "attempt-a"},
	}, j.Outbox)
	require.Equal(t, j, b.get(t, id))
	// Writes with the ended generation are stale.
	_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: first.Version,
		Result: result(id, "attempt-a", 1)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)

	// At the last generation the same rule applies: the claim fails the job.
	b.clock.Set(j.LeaseExpiresAt.Add(time.Millisecond))
	failed, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	require.Equal(t, jobs.StatusFailed, failed.Status)
	require.Equal(t, jobs.CodeRecoveryExhausted, failed.Error.Code)
	require.Equal(t, int64(3), failed.Generation)
	require.Equal(t, failed, b.get(t, id))
}

// testRunningExample is the project's running example: worker A claims
// job-42 and stalls, its lease expires, B takes over and accepts, and A's
// late writes change nothing.
func testRunningExample(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: b.id("job-42"), IntentID: "export-intent-7", Tenant: b.tenant})
	require.NoError(t, err)
	id := res.Job.ID

	// Worker A claims generation 1 and stalls.
	a := b.claim(t, id, "attempt-a", time.Minute)
	require.Equal(t, int64(1), a.Generation)

	// The lease expires, the command is redelivered, worker B claims generation 2.
	b.clock.Advance(time.Minute + time.Second)
	bj := b.claim(t, id, "attempt-b", time.Minute)
	require.Equal(t, int64(2), bj.Generation)

	// B's conditional accept wins and schedules the completion event.
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{
		JobID: id, AttemptID: "attempt-b", Generation: 2, Version: bj.Version,
		Result: result(id, "attempt-b", 2), Progress: 120,
	})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, done.Status)
	require.Equal(t, int64(2), done.Generation)
	require.Equal(t, int64(3), done.Version)
	require.Equal(t, result(id, "attempt-b", 2), done.Result)
	require.Equal(t, int64(120), done.Progress)
	require.Equal(t, "attempt-b", done.LeaseOwner)
	require.Equal(t, jobs.Message{
		ID: id + "/v3", Type: jobs.EventCompleted, Version: 3,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-b", jobs.PayloadResultKey: result(id, "attempt-b", 2).Key},
	}, done.Outbox)
	require.Equal(t, time.Unix(b.clock.Now().Add(jobs.DefaultRetention).Unix(), 0).UTC(), done.ExpiresAt)

	// A wakes up: its late accept changes nothing, selects no result and publishes nothing.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{
		JobID: id, AttemptID: "attempt-a", Generation: 1, Version: a.Version,
		Result: result(id, "attempt-a", 1), Progress: 100,
	})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	var stale *jobs.StaleError
	require.ErrorAs(t, err, &stale)
	require.Equal(t, jobs.StaleError{Generation: 2, Version: 3, Status: jobs.StatusCompleted}, *stale)
	require.Contains(t, err.Error(), fmt.Sprintf("jobs: accept %s g1: stale generation", id))
	b.requireUnchanged(t, done)

	// Nor can A renew or fail it.
	_, err = b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 1,
		LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	_, err = b.store.Fail(b.ctx, jobs.FailRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 1,
		Failure: jobs.Failure{Code: "timeout"}})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	// A third delivery of the command finds the job final.
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-c", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	var final *jobs.FinalError
	require.ErrorAs(t, err, &final)
	require.Equal(t, jobs.StatusCompleted, final.Status)
	b.requireUnchanged(t, done)
}

func testFencedWritesCheckVersion(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	b.claim(t, id, "attempt-a", time.Minute)
	renewed, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 1,
		LeaseUntil: b.clock.Now().Add(time.Minute), Progress: 10})
	require.NoError(t, err)
	require.Equal(t, int64(2), renewed.Version)
	// The right generation with a version it has moved past: refused.
	for _, v := range []int64{1, 3} {
		_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: v,
			Result: result(id, "attempt-a", 1)})
		require.ErrorIs(t, err, jobs.ErrStaleGeneration, "version %d", v)
		b.requireUnchanged(t, renewed)
	}
	// The right generation and version from another attempt: not the holder.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-z", Generation: 1, Version: 2,
		Result: result(id, "attempt-z", 1)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	b.requireUnchanged(t, renewed)
	// A generation from the future is no better.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 2, Version: 2,
		Result: result(id, "attempt-a", 2)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	b.requireUnchanged(t, renewed)
}

func testRenew(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	b.clock.Advance(30 * time.Second)
	until := b.clock.Now().Add(time.Minute)
	r, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		LeaseUntil: until, Progress: 40})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusRunning, r.Status)
	require.Equal(t, int64(1), r.Generation)
	require.Equal(t, int64(2), r.Version)
	require.Equal(t, ms(until), r.LeaseExpiresAt)
	require.Equal(t, int64(40), r.Progress)
	require.Equal(t, ms(b.clock.Now()), r.UpdatedAt)
	require.Equal(t, jobs.Message{ID: id + "/v2", Type: jobs.EventProgress, Version: 2,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-a"}}, r.Outbox)

	// The renewed lease holds off a duplicate past the original lease end.
	b.clock.Advance(45 * time.Second)
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrLeaseHeld)

	// A lease that ends before now is refused before anything is sent.
	_, err = b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 2,
		LeaseUntil: b.clock.Now(), Progress: 41})
	require.ErrorIs(t, err, jobs.ErrInvalid)
	b.requireUnchanged(t, r)
}

func testLeasesAreBounded(t *testing.T, newStore NewStore) {
	for _, tc := range []struct {
		name string
		opts []jobs.Option
		skew time.Duration
	}{
		{"default skew", nil, jobs.DefaultClockSkew},
		{"one second of skew", []jobs.Option{jobs.WithClockSkew(time.Second)}, time.Second},
		{"the largest skew", []jobs.Option{jobs.WithClockSkew(jobs.MaxClockSkew)}, jobs.MaxClockSkew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, newStore, tc.opts...)
			id := b.create(t, "job-42").ID
			before := b.get(t, id)
			// Twice the margin: room for LeaseEnd's margin and as much
			// offset between the deadline's clock and the store's.
			limit := b.clock.Now().Add(jobs.MaxLambdaTimeout + 2*tc.skew)
			for _, until := range []time.Time{
				b.clock.Now().AddDate(1, 0, 0), // a year: no takeover could ever recover the job
				limit.Add(time.Millisecond),    // the first stored instant beyond the bound
			} {
				_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: until})
				require.ErrorIs(t, err, jobs.ErrInvalid, "lease until %s", until)
				require.ErrorContains(t, err, "no Lambda invocation runs longer than 15m0s")
				b.requireUnchanged(t, before)
			}
			// The bound itself is granted; it is measured at the stored precision.
			j := b.claim(t, id, "attempt-a", jobs.MaxLambdaTimeout+2*tc.skew+999*time.Microsecond)
			require.Equal(t, ms(limit), j.LeaseExpiresAt)

			// A renewal is bounded alike, from the store's now.
			b.clock.Advance(10 * time.Minute)
			limit = b.clock.Now().Add(jobs.MaxLambdaTimeout + 2*tc.skew)
			renew := jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
				LeaseUntil: limit.Add(time.Millisecond), Progress: 1}
			_, err := b.store.Renew(b.ctx, renew)
			require.ErrorIs(t, err, jobs.ErrInvalid)
			b.requireUnchanged(t, j)
			renew.LeaseUntil = limit
			r, err := b.store.Renew(b.ctx, renew)
			require.NoError(t, err)
			require.Equal(t, ms(limit), r.LeaseExpiresAt)

			// So a stalled holder is always recoverable: once the longest
			// lease has passed, another attempt takes over.
			b.clock.Set(limit.Add(time.Millisecond))
			taken := b.claim(t, id, "attempt-b", time.Minute)
			require.Equal(t, int64(2), taken.Generation)
		})
	}
}

func testAcceptAfterExpiry(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	// Expired, but nobody took over: the generation is still current.
	b.clock.Advance(time.Hour)
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		Result: result(id, "attempt-a", 1), Progress: 7})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, done.Status)
}

func testFail(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	b.clock.Advance(time.Second)
	f, err := b.store.Fail(b.ctx, jobs.FailRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		Failure: jobs.Failure{Code: "source_gone", Message: "the source returned 410"}})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusFailed, f.Status)
	require.Equal(t, int64(1), f.Generation)
	require.Equal(t, int64(2), f.Version)
	require.Equal(t, jobs.Failure{Code: "source_gone", Message: "the source returned 410"}, f.Error)
	require.Equal(t, time.Unix(b.clock.Now().Add(jobs.DefaultRetention).Unix(), 0).UTC(), f.ExpiresAt)
	require.Equal(t, jobs.Message{ID: id + "/v2", Type: jobs.EventFailed, Version: 2,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-a", jobs.PayloadCode: "source_gone"}}, f.Outbox)
	require.Equal(t, jobs.Result{}, f.Result)

	// A failed job is final for every later transition.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 2,
		Result: result(id, "attempt-a", 1)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	var final *jobs.FinalError
	require.ErrorAs(t, err, &final)
	require.Equal(t, jobs.FinalError{Status: jobs.StatusFailed, Failure: f.Error}, *final)
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id})
	require.ErrorIs(t, err, jobs.ErrFinal)
	b.requireUnchanged(t, f)
}

func testCancelFences(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	c, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id, Reason: "the client withdrew the export"})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCancelled, c.Status)
	require.Equal(t, int64(2), c.Generation, "cancel bumps the generation")
	require.Equal(t, int64(2), c.Version)
	require.Equal(t, jobs.Failure{Code: jobs.CodeCancelled, Message: "the client withdrew the export"}, c.Error)
	require.Equal(t, jobs.Message{ID: id + "/v2", Type: jobs.EventCancelled, Version: 2,
		Payload: map[string]string{jobs.PayloadReason: "the client withdrew the export"}}, c.Outbox)
	require.False(t, c.ExpiresAt.IsZero())

	// The worker still running is fenced.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		Result: result(id, "attempt-a", 1)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	_, err = b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	b.requireUnchanged(t, c)

	// A pending job can be cancelled too; its command then finds it final.
	id2 := b.create(t, "job-43").ID
	c2, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id2})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCancelled, c2.Status)
	require.Equal(t, int64(1), c2.Generation)
	require.Equal(t, int64(1), c2.Version)
	require.Equal(t, jobs.Message{ID: id2 + "/v1", Type: jobs.EventCancelled, Version: 1}, c2.Outbox)
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id2, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
}

func testCancelIdempotent(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	c, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id})
	require.NoError(t, err)
	again, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id, Reason: "again"})
	require.NoError(t, err)
	require.Equal(t, c, again)
	b.requireUnchanged(t, c)
	// A strict cancel succeeds only when it writes: a job already cancelled
	// is ended like any other.
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id, Reason: "again", Strict: true})
	var final *jobs.FinalError
	require.ErrorAs(t, err, &final)
	require.Equal(t, jobs.StatusCancelled, final.Status)
	b.requireUnchanged(t, c)
	id3 := b.create(t, "job-44").ID
	strict, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id3, Strict: true})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCancelled, strict.Status)
	require.Equal(t, int64(1), strict.Version)
	b.requireUnchanged(t, strict)

	id2 := b.create(t, "job-43").ID
	j := b.claim(t, id2, "attempt-a", time.Minute)
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id2, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		Result: result(id2, "attempt-a", 1)})
	require.NoError(t, err)
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id2})
	require.ErrorIs(t, err, jobs.ErrFinal)
	b.requireUnchanged(t, done)
}

func testRecoveryPolicy(t *testing.T, newStore NewStore) {
	b := setup(t, newStore, jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: 2}))
	id := b.create(t, "job-42").ID
	b.claim(t, id, "attempt-a", time.Minute)
	b.clock.Advance(2 * time.Minute)
	g2 := b.claim(t, id, "attempt-b", time.Minute)
	require.Equal(t, int64(2), g2.Generation)
	b.clock.Advance(2 * time.Minute)

	// Generation 2 was the last one: the takeover fails the job instead.
	claim := jobs.ClaimRequest{JobID: id, AttemptID: "attempt-c", LeaseUntil: b.clock.Now().Add(time.Minute)}
	j, err := b.store.Claim(b.ctx, claim)
	require.ErrorIs(t, err, jobs.ErrFinal)
	var final *jobs.FinalError
	require.ErrorAs(t, err, &final)
	require.Equal(t, jobs.StatusFailed, final.Status)
	require.Equal(t, jobs.CodeRecoveryExhausted, final.Failure.Code)
	require.Equal(t, jobs.StatusFailed, j.Status)
	require.Equal(t, int64(3), j.Generation, "the failing write fences generation 2")
	require.Equal(t, int64(3), j.Version)
	require.Equal(t, "attempt-b", j.LeaseOwner)
	require.Equal(t, jobs.CodeRecoveryExhausted, j.Error.Code)
	require.Equal(t, jobs.Message{ID: id + "/v3", Type: jobs.EventFailed, Version: 3,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-c", jobs.PayloadCode: jobs.CodeRecoveryExhausted,
			jobs.PayloadPreviousAttemptID: "attempt-b"}}, j.Outbox)
	require.Equal(t, j, b.get(t, id))

	// The same claim retried, as after a lost response: the same answer,
	// the failed job with its *FinalError, and nothing written.
	b.clock.Advance(time.Second)
	retried, err := b.store.Claim(b.ctx, claim)
	require.Equal(t, j, retried)
	var retriedFinal *jobs.FinalError
	require.ErrorAs(t, err, &retriedFinal)
	require.Equal(t, *final, *retriedFinal)
	b.requireUnchanged(t, j)

	// The stalled generation 2 wakes up: fenced.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-b", Generation: 2, Version: g2.Version,
		Result: result(id, "attempt-b", 2)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	// Later deliveries find it final.
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-d", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	b.requireUnchanged(t, j)
}

func testMissingJob(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.id("job-missing")
	until := b.clock.Now().Add(time.Minute)
	_, err := b.store.Get(b.ctx, id)
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "a", LeaseUntil: until})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1, LeaseUntil: until})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1, Result: result(id, "a", 1)})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Fail(b.ctx, jobs.FailRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1, Failure: jobs.Failure{Code: "x"}})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	// Nothing was created by the attempts.
	_, err = b.store.Get(b.ctx, id)
	require.ErrorIs(t, err, jobs.ErrNotFound)
}

func testInvalidRequests(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	before := b.get(t, id)
	now := b.clock.Now()
	good := result(id, "a", 1)
	for name, call := range map[string]func() error{
		"claim bad id": func() error {
			_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: "x/y", AttemptID: "a", LeaseUntil: now.Add(time.Minute)})
			return err
		},
		"claim bad attempt": func() error {
			_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "", LeaseUntil: now.Add(time.Minute)})
			return err
		},
		"claim past lease": func() error {
			_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "a", LeaseUntil: now})
			return err
		},
		"accept generation0": func() error {
			_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "a", Version: 1, Result: good})
			return err
		},
		"accept no result": func() error {
			_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1})
			return err
		},
		"accept bad sha": func() error {
			r := good
			r.SHA256 = "ABC"
			_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1, Result: r})
			return err
		},
		"fail no code": func() error {
			_, err := b.store.Fail(b.ctx, jobs.FailRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1})
			return err
		},
		"renew negative": func() error {
			_, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "a", Generation: 1, Version: 1, LeaseUntil: now.Add(time.Minute), Progress: -1})
			return err
		},
		"get bad id":    func() error { _, err := b.store.Get(b.ctx, "intent#x#y"); return err },
		"cancel bad id": func() error { _, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: ""}); return err },
	} {
		require.ErrorIs(t, call(), jobs.ErrInvalid, name)
	}
	b.requireUnchanged(t, before)
}

func testConcurrentClaims(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	const n = 8
	errs := make([]error, n)
	got := make([]jobs.Job, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			got[i], errs[i] = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: fmt.Sprintf("attempt-%d", i),
				LeaseUntil: b.clock.Now().Add(time.Minute)})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two claims won: %d and %d", winner, i)
			winner = i
			continue
		}
		require.ErrorIs(t, err, jobs.ErrLeaseHeld)
	}
	require.NotEqual(t, -1, winner)
	require.Equal(t, int64(1), got[winner].Generation)
	require.Equal(t, got[winner], b.get(t, id))
	var held *jobs.LeaseHeldError
	for i, err := range errs {
		if i != winner {
			require.True(t, errors.As(err, &held))
			require.Equal(t, got[winner].LeaseOwner, held.Owner)
		}
	}
}

// testNudgePending: a pending job whose command was lost gets a fresh one.
func testNudgePending(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	created := b.create(t, "job-42")
	id := created.ID
	b.clock.Advance(20 * time.Minute)
	nudge := jobs.NudgeRequest{JobID: id, Generation: 0, Version: 0, Reason: "pending for 20m"}
	n, err := b.store.Nudge(b.ctx, nudge)
	require.NoError(t, err)
	want := created
	want.Version = 1
	want.UpdatedAt = ms(b.clock.Now())
	want.Outbox = jobs.Message{ID: id + "/v1", Type: jobs.MessageRun, Version: 1,
		Payload: map[string]string{jobs.PayloadReason: "pending for 20m"}}
	require.Equal(t, want, n, "pending, generation 0, version 1, a fresh run command; nothing else changes")
	require.Equal(t, n, b.get(t, id))

	// The same nudge again, as after a lost response: recognised, nothing written.
	b.clock.Advance(time.Second)
	again, err := b.store.Nudge(b.ctx, nudge)
	require.NoError(t, err)
	require.Equal(t, n, again)
	b.requireUnchanged(t, n)
	// Another nudge of the version it read (another sweeper's, with its
	// own reason) finds the job moved on.
	other := nudge
	other.Reason = "another sweeper"
	_, err = b.store.Nudge(b.ctx, other)
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	var stale *jobs.StaleError
	require.ErrorAs(t, err, &stale)
	require.Equal(t, jobs.StaleError{Generation: 0, Version: 1, Status: jobs.StatusPending}, *stale)
	b.requireUnchanged(t, n)

	// A nudge without a reason carries no payload; it reads the new version.
	n2, err := b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: id, Generation: 0, Version: 1})
	require.NoError(t, err)
	require.Equal(t, jobs.Message{ID: id + "/v2", Type: jobs.MessageRun, Version: 2}, n2.Outbox)

	// The command leads to a claim as the first one would have.
	j := b.claim(t, id, "attempt-a", time.Minute)
	require.Equal(t, int64(1), j.Generation)
	require.Equal(t, int64(3), j.Version)
	require.Equal(t, jobs.EventStarted, j.Outbox.Type)
}

// testNudgeRunning: a running job on an ended lease gets a fresh command;
// a live lease is never passed.
func testNudgeRunning(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	a := b.claim(t, id, "attempt-a", time.Minute)
	renewed, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: a.Version,
		LeaseUntil: b.clock.Now().Add(time.Minute), Progress: 30})
	require.NoError(t, err)

	// Up to and including the last millisecond of the lease: held.
	nudge := jobs.NudgeRequest{JobID: id, Generation: 1, Version: renewed.Version, Reason: "lease ended"}
	for _, at := range []time.Time{b.clock.Now(), renewed.LeaseExpiresAt} {
		b.clock.Set(at)
		_, err := b.store.Nudge(b.ctx, nudge)
		require.ErrorIs(t, err, jobs.ErrLeaseHeld)
		var held *jobs.LeaseHeldError
		require.ErrorAs(t, err, &held)
		require.Equal(t, jobs.LeaseHeldError{Owner: "attempt-a", Generation: 1, Until: renewed.LeaseExpiresAt}, *held)
		require.Contains(t, err.Error(), fmt.Sprintf("jobs: nudge %s g1 v2", id))
		b.requireUnchanged(t, renewed)
	}

	// One millisecond later the lease has ended: the nudge lands.
	b.clock.Set(renewed.LeaseExpiresAt.Add(time.Millisecond))
	n, err := b.store.Nudge(b.ctx, nudge)
	require.NoError(t, err)
	want := renewed
	want.Version = 3
	want.UpdatedAt = ms(b.clock.Now())
	want.Outbox = jobs.Message{ID: id + "/v3", Type: jobs.MessageRun, Version: 3,
		Payload: map[string]string{jobs.PayloadReason: "lease ended"}}
	require.Equal(t, want, n, "running at generation 1 with the ended lease, its holder and progress; a fresh command at v3")
	require.Equal(t, n, b.get(t, id))
	again, err := b.store.Nudge(b.ctx, nudge)
	require.NoError(t, err, "a retry after a lost response is recognised")
	require.Equal(t, n, again)
	b.requireUnchanged(t, n)

	// The holder's late accept (a request still in flight) is fenced.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: renewed.Version,
		Result: result(id, "attempt-a", 1)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration, "the nudge moved the version")
	b.requireUnchanged(t, n)

	// The command's delivery takes over with the next generation.
	bj := b.claim(t, id, "attempt-b", time.Minute)
	require.Equal(t, int64(2), bj.Generation)
	require.Equal(t, int64(4), bj.Version)
	require.Equal(t, jobs.Message{ID: id + "/v4", Type: jobs.EventStarted, Version: 4,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-b", jobs.PayloadPreviousAttemptID: "attempt-a"}}, bj.Outbox)
	// And the sweeper's nudge of what it read before is stale now.
	_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: id, Generation: 1, Version: 3})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	b.requireUnchanged(t, bj)
}

// testNudgeKeepsRecoveryPolicy: nudges do not raise the generation, so the
// recovery policy still ends a job that keeps stalling.
func testNudgeKeepsRecoveryPolicy(t *testing.T, newStore NewStore) {
	b := setup(t, newStore, jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: 1}))
	id := b.create(t, "job-42").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	for range 3 {
		b.clock.Set(j.LeaseExpiresAt.Add(time.Minute))
		var err error
		j, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: id, Generation: j.Generation, Version: j.Version})
		require.NoError(t, err)
		require.Equal(t, int64(1), j.Generation)
	}
	require.Equal(t, int64(4), j.Version)
	failed, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	require.Equal(t, jobs.StatusFailed, failed.Status)
	require.Equal(t, jobs.CodeRecoveryExhausted, failed.Error.Code)
	require.Equal(t, int64(2), failed.Generation)
	require.Equal(t, int64(5), failed.Version)
}

func testNudgeRefusals(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)

	// Final jobs, read at their current generation and version.
	done := b.create(t, "job-42")
	a := b.claim(t, done.ID, "attempt-a", time.Minute)
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: done.ID, AttemptID: "attempt-a", Generation: 1, Version: a.Version,
		Result: result(done.ID, "attempt-a", 1)})
	require.NoError(t, err)
	cancelled, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: b.create(t, "job-43").ID})
	require.NoError(t, err)
	for _, j := range []jobs.Job{done, cancelled} {
		_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: j.ID, Generation: j.Generation, Version: j.Version})
		require.ErrorIs(t, err, jobs.ErrFinal, j.ID)
		var final *jobs.FinalError
		require.ErrorAs(t, err, &final)
		require.Equal(t, j.Status, final.Status)
		b.requireUnchanged(t, j)
		// Read before it ended: the job moved on.
		_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: j.ID, Generation: 0, Version: 0})
		require.ErrorIs(t, err, jobs.ErrStaleGeneration, j.ID)
		b.requireUnchanged(t, j)
	}

	// A pending job read at another version or generation: stale.
	p := b.create(t, "job-44")
	for _, req := range []jobs.NudgeRequest{
		{JobID: p.ID, Generation: 0, Version: 1},
		{JobID: p.ID, Generation: 1, Version: 1},
	} {
		_, err = b.store.Nudge(b.ctx, req)
		require.ErrorIs(t, err, jobs.ErrStaleGeneration, "%+v", req)
		b.requireUnchanged(t, p)
	}

	// No job.
	_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: b.id("job-missing")})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Get(b.ctx, b.id("job-missing"))
	require.ErrorIs(t, err, jobs.ErrNotFound, "a refused nudge creates nothing")

	// Malformed requests are refused before anything is sent.
	for _, req := range []jobs.NudgeRequest{
		{JobID: "job/42"},
		{JobID: p.ID, Generation: -1, Version: 0},
		{JobID: p.ID, Generation: 2, Version: 1},
		{JobID: p.ID, Reason: strings.Repeat("r", 4097)},
	} {
		_, err = b.store.Nudge(b.ctx, req)
		require.ErrorIs(t, err, jobs.ErrInvalid, "%+v", req)
	}
	b.requireUnchanged(t, p)
}

// testLive: the live listing holds the jobs that are not final, by their
// last transition, oldest first, strictly before the cutoff and at most
// limit of them. The test's clock runs years before every other test's, so
// a store shared with them lists only this test's jobs before its cutoffs.
func testLive(t *testing.T, newStore NewStore) {
	t0 := Start.AddDate(-5, 0, 0)
	b := setupAt(t, t0, newStore)
	lister, ok := b.store.(jobs.Lister)
	require.True(t, ok, "%T does not implement jobs.Lister", b.store)
	at := func(d time.Duration) { t.Helper(); b.clock.Set(t0.Add(d)) }

	a := b.create(t, "job-a") // t0
	at(time.Minute)
	bb := b.create(t, "job-b")
	at(2 * time.Minute)
	c := b.create(t, "job-c")
	at(3 * time.Minute)
	d := b.create(t, "job-d")
	at(4 * time.Minute)
	b.claim(t, d.ID, "attempt-d", time.Minute) // running, updated at t0+4m
	at(5 * time.Minute)
	e := b.create(t, "job-e")
	at(6 * time.Minute)
	_, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: e.ID}) // final
	require.NoError(t, err)
	at(7 * time.Minute)
	f := b.create(t, "job-f")
	fj := b.claim(t, f.ID, "attempt-f", time.Minute)
	at(8 * time.Minute)
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: f.ID, AttemptID: "attempt-f", Generation: 1, Version: fj.Version,
		Result: result(f.ID, "attempt-f", 1)}) // final
	require.NoError(t, err)

	live := func(before time.Duration, limit int, want ...string) {
		t.Helper()
		// The DynamoDB index is eventually consistent: give it a moment.
		var got []string
		for try := 0; ; try++ {
			got, err = lister.Live(b.ctx, t0.Add(before), limit)
			require.NoError(t, err)
			if slices.Equal(want, got) || try == 20 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.Equal(t, append([]string{}, want...), append([]string{}, got...), "live before t0+%v, limit %d", before, limit)
	}
	live(0, 10)
	live(time.Millisecond, 10, a.ID)
	live(4*time.Minute, 10, a.ID, bb.ID, c.ID) // d was updated at the cutoff: not before it
	live(4*time.Minute+time.Millisecond, 10, a.ID, bb.ID, c.ID, d.ID)
	live(time.Hour, 10, a.ID, bb.ID, c.ID, d.ID) // e and f are final
	live(time.Hour, 2, a.ID, bb.ID)

	// A transition moves a job's last update: a nudged job goes to the end.
	at(9 * time.Minute)
	_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: a.ID, Generation: 0, Version: 0})
	require.NoError(t, err)
	live(9*time.Minute, 10, bb.ID, c.ID, d.ID)
	live(time.Hour, 10, bb.ID, c.ID, d.ID, a.ID)

	for _, limit := range []int{0, -1} {
		_, err = lister.Live(b.ctx, t0.Add(time.Hour), limit)
		require.ErrorIs(t, err, jobs.ErrInvalid)
	}
}

// testFinished: the finished listing holds the final jobs (completed,
// failed, cancelled), by the time of their final transition and then by id,
// strictly after the cursor and strictly before the bound, at most limit of
// them; a live job is never in it. The test's clock runs years before every
// other test's (and testLive's), so a store shared with them lists only
// this test's jobs before its bounds.
func testFinished(t *testing.T, newStore NewStore) {
	t0 := Start.AddDate(-6, 0, 0)
	b := setupAt(t, t0, newStore)
	lister, ok := b.store.(jobs.FinishedLister)
	require.True(t, ok, "%T does not implement jobs.FinishedLister", b.store)
	at := func(d time.Duration) { t.Helper(); b.clock.Set(t0.Add(d)) }

	a := b.create(t, "job-a")
	c := b.create(t, "job-c")
	d := b.create(t, "job-d")
	live := b.create(t, "job-live")
	b.claim(t, live.ID, "attempt-l", 10*time.Minute)
	at(time.Minute)
	_, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: c.ID}) // final at t0+1m
	require.NoError(t, err)
	aj := b.claim(t, a.ID, "attempt-a", 10*time.Minute)
	dj := b.claim(t, d.ID, "attempt-d", 10*time.Minute)
	at(2 * time.Minute)
	// Two jobs end in the same millisecond: by id.
	_, err = b.store.Fail(b.ctx, jobs.FailRequest{JobID: d.ID, AttemptID: "attempt-d", Generation: 1, Version: dj.Version,
		Failure: jobs.Failure{Code: "source_gone", Message: "gone"}})
	require.NoError(t, err)
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: a.ID, AttemptID: "attempt-a", Generation: 1, Version: aj.Version,
		Result: result(a.ID, "attempt-a", 1)})
	require.NoError(t, err)
	at(3 * time.Minute)
	e := b.create(t, "job-e")
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: e.ID}) // final at t0+3m
	require.NoError(t, err)

	key := func(id string, d time.Duration) jobs.FinishedJob {
		return jobs.FinishedJob{ID: id, Key: jobs.FinishedKey(id, t0.Add(d))}
	}
	fc, fa, fd, fe := key(c.ID, time.Minute), key(a.ID, 2*time.Minute), key(d.ID, 2*time.Minute), key(e.ID, 3*time.Minute)
	finished := func(after string, before time.Duration, limit int, want ...jobs.FinishedJob) {
		t.Helper()
		// The DynamoDB index is eventually consistent: give it a moment.
		var got []jobs.FinishedJob
		for try := 0; ; try++ {
			got, err = lister.Finished(b.ctx, after, t0.Add(before), limit)
			require.NoError(t, err)
			if slices.Equal(want, got) || try == 20 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.Equal(t, append([]jobs.FinishedJob{}, want...), append([]jobs.FinishedJob{}, got...),
			"finished after %q before t0+%v, limit %d", after, before, limit)
	}
	finished("", time.Minute, 10) // c ended at the bound: not before it
	finished("", time.Minute+time.Millisecond, 10, fc)
	ab, db := fa, fd
	if db.ID < ab.ID {
		ab, db = db, ab
	}
	finished("", time.Hour, 10, fc, ab, db, fe) // never the live job
	finished("", time.Hour, 2, fc, ab)
	finished(ab.Key, time.Hour, 2, db, fe) // strictly after the cursor
	finished(fe.Key, time.Hour, 10)
	finished(jobs.FinishedBound(t0.Add(2*time.Minute)), time.Hour, 10, ab, db, fe)
	finished(jobs.FinishedBound(t0.Add(2*time.Minute)), 2*time.Minute, 10) // the cursor is at the bound
	finished(jobs.FinishedBound(t0.Add(time.Hour)), 2*time.Minute, 10)     // and past it

	// The live job ends: it joins the listing at its final transition.
	at(4 * time.Minute)
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: live.ID})
	require.NoError(t, err)
	finished(fe.Key, time.Hour, 10, key(live.ID, 4*time.Minute))

	for _, limit := range []int{0, -1} {
		_, err = lister.Finished(b.ctx, "", t0.Add(time.Hour), limit)
		require.ErrorIs(t, err, jobs.ErrInvalid)
	}
}

// testGetMany: GetMany reads what Get reads, each job once, and leaves out
// jobs that do not exist; more than one batch's worth of ids is fine.
func testGetMany(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	getter, ok := b.store.(jobs.BatchGetter)
	require.True(t, ok, "%T does not implement jobs.BatchGetter", b.store)
	a := b.create(t, "job-a")
	c := b.create(t, "job-c")
	b.claim(t, c.ID, "attempt-c", time.Minute)
	ids := []string{a.ID, c.ID, a.ID}
	for i := range 120 {
		ids = append(ids, b.id(fmt.Sprintf("job-missing-%d", i)))
	}
	got, err := getter.GetMany(b.ctx, ids)
	require.NoError(t, err)
	require.Equal(t, map[string]jobs.Job{a.ID: b.get(t, a.ID), c.ID: b.get(t, c.ID)}, got)

	none, err := getter.GetMany(b.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = getter.GetMany(b.ctx, []string{a.ID, jobs.IntentKey(b.tenant, "intent-job-a")})
	require.ErrorIs(t, err, jobs.ErrInvalid, "an intent marker is not a job")
}
