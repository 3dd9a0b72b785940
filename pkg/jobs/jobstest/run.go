package jobstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// NewStore returns a fresh store with the settings of cfg (always including
// a clock). Stores returned to different tests may share a table: the suite
// uses ids and tenants unique to each test.
type NewStore func(t *testing.T, cfg jobs.Config) jobs.Store

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
	{"TextEveryStoreKeeps", testTextEveryStoreKeeps},
	{"ConcurrentClaimsElectOneHolder", testConcurrentClaims},
	{"NudgeReissuesTheCommandOfAPendingJob", testNudgePending},
	{"NudgeRunningJobOnlyAfterItsLeaseEnded", testNudgeRunning},
	{"NudgeLeavesTheRecoveryPolicyInCharge", testNudgeKeepsRecoveryPolicy},
	{"NudgeRefusals", testNudgeRefusals},
	{"LiveListsJobsThatAreNotFinalByLastUpdate", testLive},
	{"FinishedListsFinalJobsByTheirFinalTransition", testFinished},
	{"ListPagesShowEachJobOnce", testListPages},
	{"ListByStatus", testListByStatus},
	{"GetManyReadsEachJobOnce", testGetMany},
	{"HistoryIsLinearizable", testHistoryIsLinearizable},
	{"HistoryOfAFullLife", testHistoryOfAFullLife},
	{"HistoryKeepsTheLastMaxHistory", testHistoryKeepsTheLastMaxHistory},
	{"RefusedWritesAddNoEntry", testRefusedWritesAddNoEntry},
}

// bundle is what a test works with.
type bundle struct {
	store  jobs.Store
	clock  *Clock
	ctx    context.Context
	tenant string
	suffix string
}

// setup returns a bundle whose store has the default settings and the
// bundle's clock.
func setup(t *testing.T, newStore NewStore) *bundle {
	t.Helper()
	return setupWith(t, newStore, jobs.Config{})
}

// setupWith is setup with the settings of cfg.
func setupWith(t *testing.T, newStore NewStore, cfg jobs.Config) *bundle {
	t.Helper()
	return setupAt(t, Start, newStore, cfg)
}

// setupAt is setup with a clock showing start.
func setupAt(t *testing.T, start time.Time, newStore NewStore, cfg jobs.Config) *bundle {
	t.Helper()
	clock := NewClock(start)
	suffix := randomHex(t)
	cfg.Now = clock.Now
	return &bundle{
		store:  newStore(t, cfg),
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

const raceWidth = 8
