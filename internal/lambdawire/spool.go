package lambdawire

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/candidate"
)

// The worker's spool settings (see internal/app/worker's "The spool").
const (
	// DefaultMaxCandidateBytes is MAX_CANDIDATE_BYTES when it is not set:
	// template.yaml's MaxCandidateBytes default, 128 MiB.
	DefaultMaxCandidateBytes = 128 << 20
	// MinEphemeralStorageMB and MaxEphemeralStorageMB are Lambda's bounds of
	// a function's ephemeral storage (EphemeralStorage.Size, MB), the least
	// being Lambda's default. EPHEMERAL_STORAGE_MB has no default: Lambda's
	// cannot hold ten lanes of DefaultMaxCandidateBytes, and a function
	// must say what it was given.
	MinEphemeralStorageMB = 512
	MaxEphemeralStorageMB = 10240
	// spoolPercent is the share of the ephemeral storage the candidates'
	// spool budget takes.
	spoolPercent = 90
	// lanesPerBatch is the most lanes a worker invocation runs: the
	// commands mapping's BatchSize in template.yaml (held to it by
	// TestTemplateSpoolDefaultsSpoolEveryLaneOfABatch), SQS's most for a
	// FIFO queue, one lane per message group at most; on Kafka, where a
	// batch may hold more, the processor's Concurrency (workerProcessor).
	lanesPerBatch = 10
)

// SpoolBudget is the bytes the worker's candidates may hold in /tmp at
// once, for an ephemeral storage of mb MB: 90% of mb × 1,000,000 bytes
// (the smaller reading of AWS's "MB"), the rest left to the file system's
// own use (its metadata, block rounding, blocks some file systems keep for
// root, which the function's user cannot write).
func SpoolBudget(mb int) int64 { return int64(mb) * 1_000_000 / 100 * spoolPercent }

// workerCandidates is the worker's candidate store: every candidate at
// most MAX_CANDIDATE_BYTES (default DefaultMaxCandidateBytes), spooled in
// /tmp under the budget of EPHEMERAL_STORAGE_MB (SpoolBudget; required).
// Settings under which fewer than a batch's lanes spool at once are a
// problem of both, named at cold start (checkLanes). It returns nil when
// env has a problem it reports.
func workerCandidates(env *startup.Env, api candidate.S3API, bucket string, log *slog.Logger) *candidate.Store {
	if env.String("EPHEMERAL_STORAGE_MB") == "" {
		return nil
	}
	mb := env.Int("EPHEMERAL_STORAGE_MB", 0, MinEphemeralStorageMB, MaxEphemeralStorageMB)
	maxBytes := int64(env.Int("MAX_CANDIDATE_BYTES", DefaultMaxCandidateBytes, 1, int(candidate.MaxSize)))
	if env.Err() != nil {
		return nil // a setting out of its bounds, named already
	}
	budget := SpoolBudget(mb)
	if err := checkLanes(mb, maxBytes); err != nil {
		env.Problem("MAX_CANDIDATE_BYTES", err)
		return nil
	}
	if bucket == "" {
		return nil
	}
	log.InfoContext(context.Background(), "worker: candidates' spool",
		slog.Int("ephemeral_storage_mb", mb), slog.Int64("spool_budget", budget),
		slog.Int64("max_candidate_bytes", maxBytes), slog.Int64("lanes_at_once", min(budget/maxBytes, lanesPerBatch)))
	store, err := candidate.New(candidate.Config{Client: api, Bucket: bucket, MaxSize: maxBytes, SpoolBudget: budget})
	if err != nil {
		// Not expected: the bounds above and checkLanes refuse every bad
		// pair first. Named all the same, never a panic.
		env.Refuse(err, startup.Fields{"Bucket": "CANDIDATES_BUCKET", "MaxSize": "MAX_CANDIDATE_BYTES", "SpoolBudget": "EPHEMERAL_STORAGE_MB"})
		return nil
	}
	return store
}

// checkLanes refuses settings under which fewer than lanesPerBatch
// candidates of maxBytes fit the spool budget of mb MB. With fewer, the
// lanes of a full batch beyond them would wait, unclaimed, until their
// invocation ends, on every delivery while the others hold the room, and
// each of those receives counts toward the quarantine's
// QUARANTINE_AFTER_RECEIVES: innocent jobs' groups would be held. The
// error says the smallest storage that fits, or, when none does, the
// largest max size.
func checkLanes(mb int, maxBytes int64) error {
	budget := SpoolBudget(mb)
	lanes := budget / maxBytes
	if lanes >= lanesPerBatch {
		return nil
	}
	need := smallestStorageMB(maxBytes)
	fix := fmt.Sprintf("raise EPHEMERAL_STORAGE_MB to %d, or lower MAX_CANDIDATE_BYTES to %d", need, budget/lanesPerBatch)
	if need > MaxEphemeralStorageMB {
		fix = fmt.Sprintf("no EPHEMERAL_STORAGE_MB up to %d fits ten of them: lower MAX_CANDIDATE_BYTES to %d", MaxEphemeralStorageMB, budget/lanesPerBatch)
		if mb < MaxEphemeralStorageMB {
			fix += fmt.Sprintf(" (%d with EPHEMERAL_STORAGE_MB=%d)", SpoolBudget(MaxEphemeralStorageMB)/lanesPerBatch, MaxEphemeralStorageMB)
		}
	}
	return fmt.Errorf("%d bytes fit %d times in the spool of EPHEMERAL_STORAGE_MB=%d (%d%%: %d bytes), fewer than a batch's %d lanes (the commands mapping's BatchSize): "+
		"the lanes beyond would wait out each invocation, every receive counted toward QUARANTINE_AFTER_RECEIVES; %s",
		maxBytes, lanes, mb, spoolPercent, budget, lanesPerBatch, fix)
}

// smallestStorageMB is the least ephemeral storage, in MB, whose spool
// budget holds lanesPerBatch candidates of maxBytes: SpoolBudget(mb) is
// mb × 900,000 bytes, so mb is lanesPerBatch × maxBytes / 900,000 rounded
// up, and at least Lambda's least.
func smallestStorageMB(maxBytes int64) int64 {
	perMB := SpoolBudget(1)
	return max((lanesPerBatch*maxBytes+perMB-1)/perMB, MinEphemeralStorageMB)
}
